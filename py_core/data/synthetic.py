"""Seeded synthetic data sets of any size, as Tables with features x0, x1, ... and target y.

The recipes are scikit-learn's (`sklearn.datasets.make_*`), the numbers are not: everything is
drawn from one `random.Random(seed)`, so a seed gives the same table, bit for bit, in the browser
and on the server. `GENERATORS` lists them for the page: name -> Generator(function, params, task).

Bit for bit needs care: `random.random()` is the same everywhere, but `math.sin`, `cos`, `log`
and `exp` come from the platform's C library and differ in the last bit between glibc and
Pyodide's WebAssembly libc (a few percent of values; so does `random.gauss`, built on them). So
the generators use `_log`, `_sin`, `_cos` and `_normals` below: only + - * /, `math.sqrt` (IEEE
correctly rounded everywhere) and the exact `frexp`, which give the same bits on any IEEE-754
machine. They agree with `math` to about 1e-15; tests pin the generated tables' hashes.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from random import Random
from typing import NamedTuple

from .table import Column, Table


def make_regression(n_samples: int = 100, n_features: int = 10, n_informative: int = 10,
                    noise: float = 0.0, bias: float = 0.0, seed: int = 0) -> Table:
    """X ~ N(0, 1); y = bias + X @ w + noise * N(0, 1), where w is 100 * U(0, 1) on the first
    n_informative features and 0 on the others."""
    _check(n_samples, n_features)
    if not 0 <= n_informative <= n_features:
        raise ValueError(f"n_informative {n_informative} must be in [0, n_features]")
    rng = Random(seed)
    X = [_normal(rng, n_samples) for _ in range(n_features)]
    y = array("d", [bias]) * n_samples
    for j in range(n_informative):
        w = 100.0 * rng.random()
        y = array("d", [a + w * b for a, b in zip(y, X[j])])
    if noise:
        y = array("d", [a + noise * e for a, e in zip(y, _normal(rng, n_samples))])
    return _table("regression", X, y)


def make_friedman1(n_samples: int = 100, n_features: int = 10, noise: float = 0.0,
                   seed: int = 0) -> Table:
    """X ~ U(0, 1); y = 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + noise * N(0, 1);
    the other features are pure noise."""
    _check(n_samples, n_features)
    if n_features < 5:
        raise ValueError("make_friedman1 needs n_features >= 5")
    rng = Random(seed)
    X = [array("d", [rng.random() for _ in range(n_samples)]) for _ in range(n_features)]
    y = array("d", [10 * _sin(math.pi * a * b) + 20 * (c - 0.5) ** 2 + 10 * d + 5 * e
                    for a, b, c, d, e in zip(*X[:5])])
    if noise:
        y = array("d", [a + noise * e for a, e in zip(y, _normal(rng, n_samples))])
    return _table("friedman1", X, y)


def make_blobs(n_samples: int = 100, n_features: int = 2, centers: int = 3,
               cluster_std: float = 1.0, center_box: tuple[float, float] = (-10.0, 10.0),
               seed: int = 0) -> Table:
    """Gaussian blobs around `centers` centres drawn uniformly in center_box; class y is the
    blob. Samples are divided evenly (the first n_samples % centers blobs get one more), then
    the rows are shuffled."""
    _check(n_samples, n_features)
    if centers < 1:
        raise ValueError("make_blobs needs centers >= 1")
    rng = Random(seed)
    lo, hi = center_box
    middles = [[rng.uniform(lo, hi) for _ in range(n_features)] for _ in range(centers)]
    sizes = [n_samples // centers + (k < n_samples % centers) for k in range(centers)]
    labels = [k for k, size in enumerate(sizes) for _ in range(size)]
    X = [array("d", [middles[k][j] + cluster_std * e
                     for k, e in zip(labels, _normals(rng, n_samples))])
         for j in range(n_features)]
    return _shuffled("blobs", rng, X, labels)


def make_moons(n_samples: int = 100, noise: float = 0.0, seed: int = 0) -> Table:
    """Two interleaving half circles: class 0 the upper (cos t, sin t), class 1 the lower
    (1 - cos t, 0.5 - sin t), t evenly spaced in [0, pi]; plus noise * N(0, 1) on each
    coordinate; rows shuffled."""
    _check(n_samples, 1)
    rng = Random(seed)
    n_out = n_samples // 2
    n_in = n_samples - n_out
    t_out, t_in = _linspace(0.0, math.pi, n_out), _linspace(0.0, math.pi, n_in)
    x0 = [_cos(t) for t in t_out] + [1 - _cos(t) for t in t_in]
    x1 = [_sin(t) for t in t_out] + [0.5 - _sin(t) for t in t_in]
    X = [array("d", _noisy(rng, x0, noise)), array("d", _noisy(rng, x1, noise))]
    return _shuffled("moons", rng, X, [0] * n_out + [1] * n_in)


def make_spirals(n_samples: int = 100, n_classes: int = 2, turns: float = 1.5,
                 noise: float = 0.0, seed: int = 0) -> Table:
    """`n_classes` interleaved spiral arms: on arm k, radius r = s and angle
    2 pi (turns * s + k / n_classes), s evenly spaced in [0, 1]; plus noise * N(0, 1) on each
    coordinate; rows shuffled. Arms get n_samples // n_classes points (the first ones one more)."""
    _check(n_samples, 1)
    if n_classes < 2:
        raise ValueError("make_spirals needs n_classes >= 2")
    rng = Random(seed)
    x0: list[float] = []
    x1: list[float] = []
    labels: list[int] = []
    for k in range(n_classes):
        m = n_samples // n_classes + (k < n_samples % n_classes)
        for s in _linspace(0.0, 1.0, m):
            angle = 2 * math.pi * (turns * s + k / n_classes)
            x0.append(s * _cos(angle))
            x1.append(s * _sin(angle))
        labels += [k] * m
    X = [array("d", _noisy(rng, x0, noise)), array("d", _noisy(rng, x1, noise))]
    return _shuffled("spirals", rng, X, labels)


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


def generate(name: str, **params) -> Table:
    """GENERATORS[name] with its default params updated by `params`."""
    if name not in GENERATORS:
        raise ValueError(f"no generator {name!r}; there are {', '.join(GENERATORS)}")
    gen = GENERATORS[name]
    return gen.function(**{**gen.params, **params})


def _check(n_samples: int, n_features: int) -> None:
    if n_samples < 1 or n_features < 1:
        raise ValueError(f"need n_samples >= 1 and n_features >= 1, got {n_samples}, "
                         f"{n_features}")


def _normal(rng: Random, n: int) -> array:
    return array("d", _normals(rng, n))


def _noisy(rng: Random, xs: list[float], noise: float) -> list[float]:
    return [x + noise * e for x, e in zip(xs, _normals(rng, len(xs)))] if noise else xs


def _normals(rng: Random, n: int) -> list[float]:
    """n draws from N(0, 1): Marsaglia's polar method, two a time."""
    out: list[float] = []
    rand, sqrt = rng.random, math.sqrt
    while len(out) < n:
        u, v = 2.0 * rand() - 1.0, 2.0 * rand() - 1.0
        s = u * u + v * v
        if 0.0 < s < 1.0:
            f = sqrt(-2.0 * _log(s) / s)
            out += (u * f, v * f)
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


def _shuffled(name: str, rng: Random, X: list[array], labels: list[int]) -> Table:
    order = list(range(len(labels)))
    rng.shuffle(order)
    X = [array("d", map(col.__getitem__, order)) for col in X]
    return _table(name, X, array("d", [labels[i] for i in order]))
