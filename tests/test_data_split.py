"""py_core.data.split and .synthetic: seeded, deterministic, and what they claim to be."""

import hashlib
import math
import random
from collections import Counter

import pytest

from py_core.data import GENERATORS, generate, train_test_split
from py_core.data.synthetic import make_blobs, make_friedman1, make_moons, make_regression, make_spirals

# --- train_test_split ---

def test_split_is_a_seeded_partition():
    train, test = train_test_split(103, test_size=0.2, seed=5)
    assert len(test) == 21 and len(train) == 82  # ceil(0.2 * 103), as scikit-learn
    assert sorted([*train, *test]) == list(range(103))
    assert list(train) == sorted(train) and list(test) == sorted(test)
    assert train.typecode == test.typecode == "i"
    assert train_test_split(103, test_size=0.2, seed=5) == (train, test)
    assert train_test_split(103, test_size=0.2, seed=6)[1] != test
    assert len(train_test_split(10, test_size=3)[1]) == 3


def test_split_pinned():
    # The browser (Pyodide) must give exactly these; a change in random.shuffle would show here.
    assert list(train_test_split(10, test_size=0.3, seed=42)[1]) == [2, 3, 7]
    assert list(train_test_split(12, seed=0, stratify=[0, 1, 2] * 4)[1]) == [1, 2, 6]


@pytest.mark.parametrize("bad", [0.0, 1.0, 0, 10, -1])
def test_split_refuses_empty_sides(bad):
    with pytest.raises(ValueError):
        train_test_split(10, test_size=bad)


def test_stratified_split_keeps_class_proportions():
    labels = [0] * 500 + [1] * 300 + [2] * 150 + [3] * 50
    train, test = train_test_split(1000, test_size=0.25, seed=3, stratify=labels)
    assert len(test) == 250 and sorted([*train, *test]) == list(range(1000))
    for part in (train, test):
        counts = Counter(labels[i] for i in part)
        for c, n in Counter(labels).items():
            assert counts[c] / len(part) == pytest.approx(n / 1000, abs=0.005)
    plain = train_test_split(1000, test_size=0.25, seed=3)[1]
    assert list(plain) != list(test)


def test_stratified_split_leftovers_and_tiny_classes():
    labels = [0] * 7 + [1] * 2 + [2]
    train, test = train_test_split(10, test_size=0.3, seed=1, stratify=labels)
    counts = Counter(labels[i] for i in test)
    # floor quotas 2, 0, 0; the row left over goes to the largest remainder (class 1: 6/10),
    # and class 2 keeps its only row for training.
    assert len(test) == 3 and counts == {0: 2, 1: 1}
    with pytest.raises(ValueError, match="labels"):
        train_test_split(5, stratify=[0, 1])


# --- generators ---

PINNED = {  # sha256 of the columns' bytes at the default params with n_samples=500; Pyodide agrees
    "blobs": "125dde1cdb666999238eff54bb54651b1aa39582662c0f1a9a1f570b1e59af34",
    "friedman1": "c99ced96104d4138017f49af5c518d644ad03d9749bd854ed28dd0ce1868476d",
    "moons": "68b6625cef23647af326ea96b56cd87fe17a1a7f19152a998cc4bd4e43412e3a",
    "regression": "af83f1da62cd3e056eba483ac643a4e5a1d52d2b1ac8ef777fbcabc5b5406c18",
    "spirals": "9188fd6eb14ed8c40044d0fa1d5bca89610c3dc674333b95b89c453e2268fbe2",
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_pinned(name):
    h = hashlib.sha256()
    for c in generate(name, n_samples=500).columns:
        h.update(c.values.tobytes())
    assert h.hexdigest() == PINNED[name]


def test_portable_math_agrees_with_libm():
    from py_core.data.synthetic import _cos, _log, _normals, _sin
    rng = random.Random(0)
    for _ in range(20_000):
        x = rng.uniform(-20, 20)
        assert abs(_sin(x) - math.sin(x)) < 4e-15 and abs(_cos(x) - math.cos(x)) < 4e-15
        y = rng.random() ** 4 * 1e6 + 1e-300
        assert _log(y) == pytest.approx(math.log(y), rel=1e-15, abs=1e-15)
    z = _normals(random.Random(1), 50_001)
    mean = math.fsum(z) / len(z)
    assert len(z) == 50_001 and abs(mean) < 0.02
    assert math.fsum((v - mean) ** 2 for v in z) / len(z) == pytest.approx(1.0, abs=0.03)

@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_are_deterministic_and_named(name):
    a, b = generate(name, n_samples=57, seed=3), generate(name, n_samples=57, seed=3)
    assert a.n_rows == 57 and a.names[-1] == "y"
    assert a.names[:-1] == [f"x{j}" for j in range(len(a.names) - 1)]
    assert all(c.kind == "numeric" for c in a.columns)
    assert [c.values for c in a.columns] == [c.values for c in b.columns]
    assert [c.values for c in generate(name, n_samples=57, seed=4).columns] != \
        [c.values for c in a.columns]
    assert a.column("y").task == GENERATORS[name].task


def test_make_regression_recipe():
    t = make_regression(n_samples=400, n_features=5, n_informative=2, noise=0.0, seed=1)
    X = [list(c.values) for c in t.columns[:5]]
    y = list(t.column("y").values)
    # y is exactly linear in x0, x1 and independent of the rest: solve for w from two rows.
    (a, b), (c, d) = (X[0][0], X[1][0]), (X[0][1], X[1][1])
    det = a * d - b * c
    w0, w1 = (y[0] * d - b * y[1]) / det, (a * y[1] - c * y[0]) / det
    assert all(abs(w0 * p + w1 * q - v) < 1e-6 for p, q, v in zip(X[0], X[1], y))
    assert 0 < w0 < 100 and 0 < w1 < 100
    mean = sum(X[2]) / 400
    assert abs(mean) < 0.2 and sum((v - mean) ** 2 for v in X[2]) / 399 == pytest.approx(1, abs=0.2)


def test_make_friedman1_recipe():
    t = make_friedman1(n_samples=50, n_features=6, seed=2)
    cols = [list(c.values) for c in t.columns]
    assert all(0 <= v < 1 for col in cols[:6] for v in col)
    for x0, x1, x2, x3, x4, _, y in zip(*cols):
        assert y == pytest.approx(10 * math.sin(math.pi * x0 * x1) + 20 * (x2 - 0.5) ** 2
                                  + 10 * x3 + 5 * x4)
    with pytest.raises(ValueError):
        make_friedman1(n_features=4)


def test_make_blobs_recipe():
    t = make_blobs(n_samples=301, n_features=3, centers=3, cluster_std=0.5, seed=0)
    y = list(t.column("y").values)
    assert Counter(y) == {0.0: 100, 1.0: 112, 2.0: 89}  # each row's blob drawn uniformly
    for k in range(3):  # each blob's spread is cluster_std around its own centre
        xs = [v for v, c in zip(t.column("x0").values, y) if c == k]
        m = sum(xs) / len(xs)
        assert math.sqrt(sum((v - m) ** 2 for v in xs) / (len(xs) - 1)) == pytest.approx(0.5, rel=0.2)


def test_make_moons_and_spirals_without_noise_lie_on_their_curves():
    t = make_moons(n_samples=40, noise=0.0, seed=0)
    for x0, x1, y in zip(*(c.values for c in t.columns)):
        cx, cy = (0.0, 0.0) if y == 0 else (1.0, 0.5)
        assert math.hypot(x0 - cx, x1 - cy) == pytest.approx(1.0)
        assert (x1 >= -1e-12) if y == 0 else (x1 <= 0.5 + 1e-12)
    t = make_spirals(n_samples=90, n_classes=3, noise=0.0, seed=0)
    assert Counter(t.column("y").values) == {0.0: 30, 1.0: 30, 2.0: 30}
    assert max(math.hypot(a, b) for a, b in zip(t.column("x0").values, t.column("x1").values)) \
        == pytest.approx(1.0)


def test_counter_based_normals():
    """inverse_normal is Acklam's approximation (relative error < 1.2e-9 against the exact
    quantile); the uniforms never reach 0 or 1; the normals have mean 0 and variance 1; value i
    of a stream does not depend on how many are drawn; streams and seeds differ."""
    from statistics import NormalDist

    from py_core.data.synthetic import inverse_normal, normal_column, stream_key, uniform_at
    exact = NormalDist()
    k1, k2 = stream_key(7, 3)
    for i in range(5000):
        p = uniform_at(k1, k2, i)
        assert 0 < p < 1
        x = inverse_normal(p)
        assert abs(x - exact.inv_cdf(p)) <= 1.2e-9 * max(1.0, abs(x))
    for p in (2 ** -54, 1e-12, 0.02425, 0.5, 0.97575, 1 - 2 ** -53):
        assert inverse_normal(p) == pytest.approx(exact.inv_cdf(p), rel=1.2e-9, abs=1e-12)
    z = normal_column(0, 0, 50_000)
    mean = math.fsum(z) / len(z)
    assert abs(mean) < 0.02 and math.fsum((v - mean) ** 2 for v in z) / len(z) == \
        pytest.approx(1.0, abs=0.03)
    assert normal_column(0, 0, 100) == z[:100]
    assert normal_column(0, 1, 100) != z[:100] and normal_column(1, 0, 100) != z[:100]



@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_look_at_stop_all_along(name, monkeypatch):
    from py_core.data import synthetic
    from py_core.errors import Stopped
    monkeypatch.setattr(synthetic, "_BLOCK", 64)
    monkeypatch.setattr(synthetic, "_bulk", None)  # Python's loops (a server test may install numpy's)
    params = {"n_samples": 64 * 5, "seed": 3} | ({"n_features": 5} if name == "friedman1" else {})
    asked = []
    table = generate(name, should_stop=lambda: asked.append(1) and False, **params)
    assert len(asked) >= 5  # a look every block of rows (or every column)
    assert [c.values for c in table.columns] == [c.values for c in generate(name, **params).columns]
    with pytest.raises(Stopped):
        generate(name, should_stop=lambda: True, **params)
