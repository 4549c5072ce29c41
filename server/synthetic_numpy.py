"""numpy forms of py_core's synthetic-data bulk kernels (py_core/data/synthetic.py; the tab's are
web/synthetic.js): the same integer and IEEE-754 operations in the same order, one numpy ufunc
each, so the same bits, and py_core checks every result on a sample of indices. Registered for
the server's runners by `install()`: a 1M x 20 `regression` set in seconds, not minutes."""
from __future__ import annotations

import numpy as np

from py_core.data import synthetic

_M32 = np.uint64(0xFFFFFFFF)


def _fmix32(h):
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)  # uint32 arithmetic wraps, as `& 0xFFFFFFFF` does
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _uniforms(n: int, k1: int, k2: int):
    i2 = np.arange(n, dtype=np.uint64) * np.uint64(2)
    k1, k2 = np.uint32(k1), np.uint32(k2)
    a = _fmix32(_fmix32(((i2 & _M32).astype(np.uint32)) ^ k1) ^ k2)
    b = _fmix32(_fmix32((((i2 + np.uint64(1)) & _M32).astype(np.uint32)) ^ k1) ^ k2)
    return ((a >> np.uint32(5)).astype(np.float64) * 67108864.0
            + (b >> np.uint32(6)).astype(np.float64) + 0.5) / 9007199254740992.0


def _log(x):
    m, e = np.frexp(x)
    small = m < synthetic._SQRT_HALF
    m = np.where(small, m * 2.0, m)
    e = np.where(small, e - 1, e).astype(np.float64)
    f = (m - 1.0) / (m + 1.0)
    f2 = f * f
    series = np.zeros_like(f)
    for k in range(25, 0, -2):
        series = series * f2 + 1.0 / k
    return e * synthetic._LN2 + 2.0 * f * series


def _inverse_normal(p):
    a, b, c, d = synthetic._A, synthetic._B, synthetic._C, synthetic._D
    q = p - 0.5
    r = q * q
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
    low, high = p < synthetic._P_LOW, p > 1.0 - synthetic._P_LOW
    tail = low | high
    if tail.any():
        pt = p[tail]
        lt = low[tail]
        qt = np.sqrt(-2.0 * _log(np.where(lt, pt, 1.0 - pt)))
        xt = (((((c[0] * qt + c[1]) * qt + c[2]) * qt + c[3]) * qt + c[4]) * qt + c[5]) / \
            ((((d[0] * qt + d[1]) * qt + d[2]) * qt + d[3]) * qt + 1.0)
        x[tail] = np.where(lt, xt, -xt)
    return x


def _view(arr, dtype):
    return np.frombuffer(arr, dtype=dtype)  # a writable view of the Python array's memory


class Kernels:
    """The interface of web/synthetic.js's `kernels`, on Python arrays."""

    @staticmethod
    def normals(out, k1, k2):
        _view(out, np.float64)[:] = _inverse_normal(_uniforms(len(out), k1, k2))

    @staticmethod
    def labels(out, k1, k2, k):
        _view(out, np.int32)[:] = np.floor(_uniforms(len(out), k1, k2) * float(k))

    @staticmethod
    def axpy(out, y, a, x):
        _view(out, np.float64)[:] = _view(y, np.float64) + a * _view(x, np.float64)

    @staticmethod
    def blobColumn(out, e, labels, middles, std):  # noqa: N802 - the JavaScript name
        _view(out, np.float64)[:] = _view(middles, np.float64)[_view(labels, np.int32)] \
            + std * _view(e, np.float64)


def install() -> None:
    """py_core's generators use these kernels in this process."""
    synthetic.use_bulk(Kernels)
