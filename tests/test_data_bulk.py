"""py_core.data.bulk and the split's shuffle: the C-loop forms give what the plain ones give, bit
for bit (sorting for medians, random.shuffle for the split, row by row for the matrices)."""

import math
import random
import struct
from array import array
from itertools import compress

import pytest

from py_core.data import bulk, split
from py_core.data.features import take_rows

SEED = random.randrange(2**32)  # fresh inputs every run; the seed is in each failure's message


def columns(rng: random.Random, n: int):
    """Columns as people's data has them: continuous around zero and away from it, integers,
    signed zeros, NaN, infinities, subnormals, huge ranges, one value."""
    def col(draw):
        return array("d", [draw() for _ in range(n)])
    yield "normal", col(lambda: rng.gauss(0, 1))
    yield "uniform", col(rng.random)
    yield "integers", col(lambda: float(rng.randrange(-3, 40)))
    yield "signed zeros", col(lambda: rng.choice([0.0, -0.0, 1.0, -1.0]))
    yield "plus zeros", col(lambda: rng.choice([0.0, 0.0, 2.0, -1.0]))
    yield "NaN", col(lambda: rng.choice([math.nan, -math.nan, rng.gauss(5, 3)]))
    yield "all NaN", col(lambda: math.nan)
    yield "infinities", col(lambda: rng.choice([math.inf, -math.inf, rng.random(), math.nan]))
    yield "subnormals", col(lambda: rng.choice([5e-324, -5e-324, 1e-310, rng.random() * 1e-300]))
    yield "wide", col(lambda: rng.choice([1, -1]) * 10 ** rng.uniform(-300, 300))
    yield "one value", col(lambda: 3.25)
    yield "mostly one value", col(lambda: rng.choice([1.5, 1.5, 1.5, rng.random()]))


def sorted_median(values, keep):
    vals = sorted(v for v in (values if keep is None else compress(values, keep)) if v == v)
    k = len(vals)
    return 0.0 if k == 0 else (vals[k // 2] if k % 2 else (vals[k // 2 - 1] + vals[k // 2]) / 2)


@pytest.mark.parametrize("read_out", [bulk._READ_OUT, 1])
def test_median_is_the_sorted_median_bit_for_bit(monkeypatch, read_out):
    # read_out=1 makes every column go down the byte levels instead of being read out early
    monkeypatch.setattr(bulk, "_READ_OUT", read_out)
    rng = random.Random(SEED)
    for n in (1, 2, 7, 3000, 20001):
        for name, values in columns(rng, n):
            for keep in (None, bytes(rng.random() < 0.8 for _ in range(n)), bytes(n)):
                want, got = sorted_median(values, keep), bulk.median(values, keep)
                assert struct.pack("<d", got) == struct.pack("<d", want), (SEED, n, name, keep)
                if keep is not None:
                    assert bulk.median(values, bulk.rows_int(keep)) == got or got != got


def test_fill_replaces_every_nan_and_nothing_else():
    rng = random.Random(SEED)
    for name, values in columns(rng, 5000):
        want = array("d", [-2.5 if v != v else v for v in values])
        assert bulk.fill(values, -2.5).tobytes() == want.tobytes(), (SEED, name)


def test_split_rows_and_interleave_are_the_row_by_row_matrices(monkeypatch):
    monkeypatch.setattr(bulk, "_ROW_BLOCK", 64)  # many blocks, and test rows at their edges
    rng = random.Random(SEED)
    n, nf = 1000, 3
    cols = [array("d", [rng.random() for _ in range(n)]) for _ in range(nf)]
    X = array("d", [cols[j][i] for i in range(n) for j in range(nf)])
    assert bulk.interleave(cols) == X
    for test in ([], [0, 63, 64, 65, 127, 128, 999], sorted(rng.sample(range(n), 200))):
        test = array("i", test)
        train = [i for i in range(n) if i not in set(test)]
        X_train, X_test = bulk.split_rows(cols, test)
        assert X_train == take_rows(X, nf, train) and X_test == take_rows(X, nf, test)
        assert X_train == array("d", [X[i * nf + j] for i in train for j in range(nf)])


def test_shuffle_is_random_shuffle_and_leaves_the_same_state():
    rng = random.Random(SEED)
    for n in (0, 1, 2, 3, 17, 1000, 70_000):
        seed = rng.randrange(2**32)
        a, b = list(range(n)), list(range(n))
        ra, rb = random.Random(seed), random.Random(seed)
        ra.shuffle(a)
        split.shuffle(rb, b)
        assert a == b and ra.random() == rb.random(), (SEED, n)
        # settled: the first places hold the same set (the rest of the order is not kept)
        c = list(range(n))
        split.shuffle(random.Random(seed), c, settled=n // 5)
        assert c[n // 5:] == a[n // 5:] and sorted(c[:n // 5]) == sorted(a[:n // 5])


def test_split_checks_between_blocks():
    calls = []
    split.train_test_split(300_000, seed=1, check=lambda: calls.append(1))
    assert len(calls) >= 300_000 * 0.8 // split._BLOCK
