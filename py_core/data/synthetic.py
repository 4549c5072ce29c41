"""Seeded synthetic data sets of any size, as Tables with features x0, x1, ... and target y.

The recipes are scikit-learn's (`sklearn.datasets.make_*`), the numbers are not: a seed gives
the same table, bit for bit, in the browser and on the server. `regression` and `blobs`, the ones
people make large, draw from counter-based streams (`normal_column`, `label_column`: value i
depends on seed, stream and i only), whose bulk loops the tab runs in JavaScript
(web/synthetic.js, checked here on samples): 1M x 20 in seconds instead of a minute. The
others draw from one `random.Random(seed)`. `GENERATORS` lists them for the page: name -> Generator(function, params, task).

Bit for bit needs care: `random.random()` is the same everywhere, but `math.sin`, `cos`, `log`
and `exp` come from the platform's C library and differ in the last bit between glibc and
Pyodide's WebAssembly libc (a few percent of values; so does `random.gauss`, built on them). So
the generators use `_log`, `_sin`, `_cos` and `_normals` below: only + - * /, `math.sqrt` (IEEE
correctly rounded everywhere) and the exact `frexp`, which give the same bits on any IEEE-754
machine. They agree with `math` to about 1e-15; tests pin the generated tables' hashes.

Every generator takes `should_stop` (called between columns and every _BLOCK rows; True raises
`Stopped`), so that Stop ends a job within a fraction of a second while its data is made.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from random import Random
from typing import NamedTuple

from ..errors import checker
from .split import shuffle
from .table import Column, Table

_BLOCK = 1 << 14  # rows made between Stop checks where a row is a Python step


def make_regression(n_samples: int = 100, n_features: int = 10, n_informative: int = 10,
                    noise: float = 0.0, bias: float = 0.0, seed: int = 0, *,
                    should_stop=None) -> Table:
    """X ~ N(0, 1); y = bias + X @ w + noise * N(0, 1), where w is 100 * U(0, 1) on the first
    n_informative features and 0 on the others. X and the noise are counter-based normals
    (`normal_column`: feature j is stream j, the noise stream n_features)."""
    _check(n_samples, n_features)
    if not 0 <= n_informative <= n_features:
        raise ValueError(f"n_informative {n_informative} must be in [0, n_features]")
    rng = Random(seed)
    check = checker(should_stop)
    X = [normal_column(seed, j, n_samples, check) for j in range(n_features)]
    y = array("d", [bias]) * n_samples
    for j in range(n_informative):
        y = axpy(y, 100.0 * rng.random(), X[j])
        check()
    if noise:
        y = axpy(y, noise, normal_column(seed, n_features, n_samples, check))
    return _table("regression", X, y)


def make_friedman1(n_samples: int = 100, n_features: int = 10, noise: float = 0.0,
                   seed: int = 0, *, should_stop=None) -> Table:
    """X ~ U(0, 1); y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + noise * N(0, 1);
    the other features are pure noise."""
    _check(n_samples, n_features)
    if n_features < 5:
        raise ValueError("make_friedman1 needs n_features >= 5")
    rng = Random(seed)
    check = checker(should_stop)
    X = []
    for _ in range(n_features):
        X.append(array("d"))
        for rows in _blocks(n_samples, check):
            X[-1].extend([rng.random() for _ in rows])
    y = array("d")
    for rows in _blocks(n_samples, check):
        y.extend([10 * _sin(math.pi * a * b) + 20 * (c - 0.5) ** 2 + 10 * d + 5 * e
                  for a, b, c, d, e in zip(*(x[rows.start:rows.stop] for x in X[:5]))])
    if noise:
        y = array("d", [a + noise * e for a, e in zip(y, _normals(rng, n_samples, check))])
    return _table("friedman1", X, y)


def make_blobs(n_samples: int = 100, n_features: int = 2, centers: int = 3,
               cluster_std: float = 1.0, center_box: tuple[float, float] = (-10.0, 10.0),
               seed: int = 0, *, should_stop=None) -> Table:
    """Gaussian blobs around `centers` centres drawn uniformly in center_box; class y is the
    blob, drawn uniformly for each row (counter-based, stream `_LABELS`); feature j of a row
    is its centre's plus cluster_std * N(0, 1) (`normal_column`, stream j)."""
    _check(n_samples, n_features)
    if centers < 1:
        raise ValueError("make_blobs needs centers >= 1")
    rng = Random(seed)
    check = checker(should_stop)
    lo, hi = center_box
    middles = [[rng.uniform(lo, hi) for _ in range(n_features)] for _ in range(centers)]
    labels = label_column(seed, _LABELS, n_samples, centers, check)
    X = [blob_column(normal_column(seed, j, n_samples, check), labels,
                     array("d", [m[j] for m in middles]), cluster_std)
         for j in range(n_features)]
    return _table("blobs", X, array("d", labels))


def make_moons(n_samples: int = 100, noise: float = 0.0, seed: int = 0, *,
               should_stop=None) -> Table:
    """Two interleaving half circles: class 0 the upper (cos t, sin t), class 1 the lower
    (1 - cos t, 0.5 - sin t), t evenly spaced in [0, pi]; plus noise * N(0, 1) on each
    coordinate; rows shuffled."""
    _check(n_samples, 1)
    rng = Random(seed)
    check = checker(should_stop)
    n_out = n_samples // 2
    n_in = n_samples - n_out
    t_out, t_in = _linspace(0.0, math.pi, n_out), _linspace(0.0, math.pi, n_in)
    x0 = _each(_cos, t_out, check) + [1 - c for c in _each(_cos, t_in, check)]
    x1 = _each(_sin, t_out, check) + [0.5 - s for s in _each(_sin, t_in, check)]
    X = [array("d", _noisy(rng, x0, noise, check)), array("d", _noisy(rng, x1, noise, check))]
    return _shuffled("moons", rng, X, [0] * n_out + [1] * n_in, check)


def make_spirals(n_samples: int = 100, n_classes: int = 2, turns: float = 1.5,
                 noise: float = 0.0, seed: int = 0, *, should_stop=None) -> Table:
    """`n_classes` interleaved spiral arms: on arm k, radius r = s and angle
    2 pi (turns * s + k / n_classes), s evenly spaced in [0, 1]; plus noise * N(0, 1) on each
    coordinate; rows shuffled. Arms get n_samples // n_classes points (the first ones one more)."""
    _check(n_samples, 1)
    if n_classes < 2:
        raise ValueError("make_spirals needs n_classes >= 2")
    rng = Random(seed)
    check = checker(should_stop)
    x0: list[float] = []
    x1: list[float] = []
    labels: list[int] = []
    for k in range(n_classes):
        m = n_samples // n_classes + (k < n_samples % n_classes)
        for i, s in enumerate(_linspace(0.0, 1.0, m), 1):
            angle = 2 * math.pi * (turns * s + k / n_classes)
            x0.append(s * _cos(angle))
            x1.append(s * _sin(angle))
            if i % _BLOCK == 0:
                check()
        labels += [k] * m
    X = [array("d", _noisy(rng, x0, noise, check)), array("d", _noisy(rng, x1, noise, check))]
    return _shuffled("spirals", rng, X, labels, check)


class Generator(NamedTuple):
    function: Callable[..., Table]
    params: dict  # the defaults the page starts from; any keyword of `function`
    task: str  # what the target y is for


GENERATORS: dict[str, Generator] = {
    "regression": Generator(make_regression, {"n_samples": 1000, "n_features": 10,
                                              "n_informative": 5, "noise": 10.0, "seed": 0},
                            "regression"),
    "friedman1": Generator(make_friedman1, {"n_samples": 1000, "n_features": 10,
                                            "noise": 1.0, "seed": 0}, "regression"),
    "blobs": Generator(make_blobs, {"n_samples": 1000, "n_features": 2, "centers": 3,
                                    "cluster_std": 1.0, "seed": 0}, "classification"),
    "moons": Generator(make_moons, {"n_samples": 1000, "noise": 0.1, "seed": 0},
                       "classification"),
    "spirals": Generator(make_spirals, {"n_samples": 1000, "n_classes": 2, "turns": 1.5,
                                        "noise": 0.05, "seed": 0}, "classification"),
}


def generate(name: str, *, should_stop=None, **params) -> Table:
    """GENERATORS[name] with its default params updated by `params`."""
    if name not in GENERATORS:
        raise ValueError(f"no generator {name!r}; there are {', '.join(GENERATORS)}")
    gen = GENERATORS[name]
    return gen.function(**{**gen.params, **params}, should_stop=should_stop)


# --- counter-based draws, in bulk ------------------------------------------------------------
# Value i of stream s of seed k depends on (k, s, i) only: a 32-bit integer hash (murmur3's
# finaliser, twice) gives 53 random bits, a uniform p in (0, 1), and Acklam's rational inverse
# of the normal CDF (relative error below 1.2e-9) a normal. Only integer operations, + - * /,
# sqrt and `_log`: the same bits on any IEEE-754 machine. The bulk functions below have this pure
# Python form; the tab registers JavaScript ones (web/synthetic.js, `use_bulk`) with the same
# operations in the same order, and each of their results is checked here on a sample of
# indices against the Python form (a difference, never expected, falls back to Python).

_M32 = 0xFFFFFFFF
_LABELS = 1 << 20  # the stream of make_blobs' labels
_P_LOW = 0.02425
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
      6.680131188771972e+01, -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
      3.754408661907416e+00)
_bulk = None  # the tab's JavaScript kernels (`use_bulk`), or None


def use_bulk(kernels) -> None:
    """Let `kernels` (normals, axpy, blobColumn, labels: web/synthetic.js) fill the generators'
    columns in place; None restores pure Python."""
    global _bulk
    _bulk = kernels


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def stream_key(seed: int, stream: int) -> tuple[int, int]:
    """The two 32-bit keys of (seed, stream)."""
    k1 = _fmix32((seed & _M32) ^ 0x9E3779B9)
    k2 = _fmix32(((seed >> 32) & _M32) ^ _fmix32((stream & _M32) ^ 0x7F4A7C15) ^ k1)
    return k1, _fmix32(k2 ^ 0x632BE5AB)


def uniform_at(k1: int, k2: int, i: int) -> float:
    """Value i (0 <= i < 2**31) of the uniform stream keyed (k1, k2), in (0, 1): never 0 or 1."""
    a = _fmix32(_fmix32(((2 * i) ^ k1) & _M32) ^ k2)
    b = _fmix32(_fmix32(((2 * i + 1) ^ k1) & _M32) ^ k2)
    return ((a >> 5) * 67108864.0 + (b >> 6) + 0.5) / 9007199254740992.0


def inverse_normal(p: float) -> float:
    """Acklam's approximation of the standard normal quantile at p in (0, 1)."""
    a, b, c, d = _A, _B, _C, _D
    if p < _P_LOW or p > 1.0 - _P_LOW:
        q = math.sqrt(-2.0 * _log(p if p < _P_LOW else 1.0 - p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
        return x if p < _P_LOW else -x
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)


def normal_column(seed: int, stream: int, n: int, check=None) -> array:
    """n standard normals: value i is inverse_normal(uniform_at(*stream_key(seed, stream), i)).
    check: called after the bulk kernel, or every _BLOCK values in Python."""
    k1, k2 = stream_key(seed, stream)
    out = array("d", [0.0]) * n
    if _bulk is not None:
        _bulk.normals(out, k1, k2)
        if check is not None:
            check()
        if _sample_ok(n, lambda i: inverse_normal(uniform_at(k1, k2, i)), out):
            return out
    for rows in _blocks(n, check):
        out[rows.start:rows.stop] = array("d", [inverse_normal(uniform_at(k1, k2, i))
                                               for i in rows])
    return out


def label_column(seed: int, stream: int, n: int, k: int, check=None) -> array:
    """n labels in 0..k-1, each int(uniform * k), as array('i')."""
    k1, k2 = stream_key(seed, stream)
    out = array("i", [0]) * n
    if _bulk is not None:
        _bulk.labels(out, k1, k2, k)
        if _sample_ok(n, lambda i: int(uniform_at(k1, k2, i) * k), out):
            return out
    for rows in _blocks(n, check):
        out[rows.start:rows.stop] = array("i", [int(uniform_at(k1, k2, i) * k) for i in rows])
    return out


def axpy(y: array, a: float, x: array) -> array:
    """A new array of y[i] + a * x[i] (the product rounded, then the sum)."""
    a = float(a)
    if _bulk is not None:
        out = array("d", [0.0]) * len(y)
        _bulk.axpy(out, y, a, x)
        if _sample_ok(len(y), lambda i: y[i] + a * x[i], out):
            return out
    return array("d", map(float.__add__, y, map(a.__mul__, x)))


def blob_column(e: array, labels: array, middles: array, std: float) -> array:
    """A new array of middles[labels[i]] + std * e[i]."""
    std = float(std)
    if _bulk is not None:
        out = array("d", [0.0]) * len(e)
        _bulk.blobColumn(out, e, labels, middles, std)
        if _sample_ok(len(e), lambda i: middles[labels[i]] + std * e[i], out):
            return out
    return array("d", map(float.__add__, map(middles.__getitem__, labels), map(std.__mul__, e)))


def _sample(n: int) -> list[int]:
    """Indices checked after a JavaScript kernel: the ends and 61 spread over the middle."""
    return sorted({0, n - 1, *(((i * 2654435761) % n) for i in range(61))}) if n else []


def _sample_ok(n: int, reference, out) -> bool:
    return all(reference(i) == out[i] for i in _sample(n))


def _check(n_samples: int, n_features: int) -> None:
    if n_samples < 1 or n_features < 1:
        raise ValueError(f"need n_samples >= 1 and n_features >= 1, got {n_samples}, "
                         f"{n_features}")


def _blocks(n: int, check):
    """range(n) in ranges of _BLOCK, check() after each."""
    for a in range(0, n, _BLOCK):
        yield range(a, min(n, a + _BLOCK))
        if check is not None:
            check()


def _each(f, xs: list, check) -> list:
    """[f(x) for x in xs], check() every _BLOCK values."""
    out: list = []
    for rows in _blocks(len(xs), check):
        out += map(f, xs[rows.start:rows.stop])
    return out


def _noisy(rng: Random, xs: list[float], noise: float, check=None) -> list[float]:
    return [x + noise * e for x, e in zip(xs, _normals(rng, len(xs), check))] if noise else xs


def _normals(rng: Random, n: int, check=None) -> list[float]:
    """n draws from N(0, 1): Marsaglia's polar method, two a time."""
    out: list[float] = []
    rand, sqrt = rng.random, math.sqrt
    while len(out) < n:
        for _ in range(_BLOCK):
            u, v = 2.0 * rand() - 1.0, 2.0 * rand() - 1.0
            s = u * u + v * v
            if 0.0 < s < 1.0:
                f = sqrt(-2.0 * _log(s) / s)
                out += (u * f, v * f)
                if len(out) >= n:
                    break
        if check is not None:
            check()
    del out[n:]
    return out


_LN2 = 0.6931471805599453
_SQRT_HALF = 0.7071067811865476
_PIO2_HI, _PIO2_LO = 1.5707963267948966, 6.123233995736766e-17  # pi/2 = HI + LO to ~1e-33


def _log(x: float) -> float:
    """Natural log of x > 0. x = m 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(f),
    f = (m - 1) / (m + 1), |f| < 0.172, as an odd series to f^25 (next term < 1e-19)."""
    m, e = math.frexp(x)
    if m < _SQRT_HALF:
        m, e = m * 2.0, e - 1
    f = (m - 1.0) / (m + 1.0)
    f2 = f * f
    series = 0.0
    for k in range(25, 0, -2):  # Horner: 1 + f2/3 + f2^2/5 + ...
        series = series * f2 + 1.0 / k
    return e * _LN2 + 2.0 * f * series


def _sin_cos(x: float) -> tuple[float, float]:
    """(sin x, cos x) for |x| up to about 1e6: x = q pi/2 + r with |r| <= pi/4 (Cody-Waite,
    two-part pi/2), then Taylor series in r to r^18 (next term < 1e-19)."""
    q = math.floor(x / _PIO2_HI + 0.5)
    r = (x - q * _PIO2_HI) - q * _PIO2_LO
    r2 = r * r
    s = c = 0.0
    for k in range(9, 0, -1):  # sin r = r (1 - r2/(2*3) (1 - r2/(4*5) (...)))
        s = 1.0 - s * r2 / ((2 * k) * (2 * k + 1))
        c = 1.0 - c * r2 / ((2 * k - 1) * (2 * k))
    s *= r
    return ((s, c), (c, -s), (-s, -c), (-c, s))[q % 4]


def _sin(x: float) -> float:
    return _sin_cos(x)[0]


def _cos(x: float) -> float:
    return _sin_cos(x)[1]


def _linspace(a: float, b: float, n: int) -> list[float]:
    return [a] * n if n < 2 else [a + (b - a) * i / (n - 1) for i in range(n)]


def _table(name: str, X: list[array], y: array) -> Table:
    return Table(name, [Column.numeric(f"x{j}", col) for j, col in enumerate(X)]
                 + [Column.numeric("y", y)])


def _shuffled(name: str, rng: Random, X: list[array], labels: list[int], check=None) -> Table:
    order = list(range(len(labels)))
    shuffle(rng, order, check=check)  # rng.shuffle's order, drawn faster
    X = [array("d", map(col.__getitem__, order)) for col in X]
    return _table(name, X, array("d", [labels[i] for i in order]))
