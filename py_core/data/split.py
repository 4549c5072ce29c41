"""Seeded train/test splits, the same in the browser (Pyodide) and on the server (CPython).

Only `random.Random(seed).shuffle` is used. Pyodide is CPython, and shuffle's algorithm (over
`getrandbits`) has not changed since Python 3.2; tests pin a few outputs so that a change would
show.
"""
from __future__ import annotations

import math
from array import array
from random import Random


def train_test_split(n_rows: int, test_size: float = 0.2, seed: int = 42,
                     stratify=None) -> tuple[array, array]:
    """(train_idx, test_idx): array('i') of row indices, each sorted ascending.

    test_size: a fraction in (0, 1), giving ceil(test_size * n_rows) test rows as scikit-learn
    does, or a count. stratify: one class label per row (e.g. the class codes y); then each
    class is shuffled on its own (classes in sorted order, one Random for all) and gives
    floor(n_c * n_test / n_rows) test rows, the rows left over going to the classes with the
    largest remainders (ties: the smaller label), and no class gives away its last training row.
    """
    n_test = _test_count(n_rows, test_size)
    rng = Random(seed)
    if stratify is None:
        order = list(range(n_rows))
        rng.shuffle(order)
        return array("i", sorted(order[n_test:])), array("i", sorted(order[:n_test]))
    labels = list(stratify)
    if len(labels) != n_rows:
        raise ValueError(f"stratify has {len(labels)} labels for {n_rows} rows")
    members: dict = {}
    for i, c in enumerate(labels):
        members.setdefault(c, []).append(i)
    classes = sorted(members)
    quota = {c: min(len(members[c]) * n_test // n_rows, len(members[c]) - 1) for c in classes}
    short = n_test - sum(quota.values())
    by_remainder = sorted(classes, key=lambda c: (-(len(members[c]) * n_test % n_rows), c))
    for c in by_remainder:
        if short <= 0:
            break
        if quota[c] < len(members[c]) - 1:
            quota[c] += 1
            short -= 1
    train: list[int] = []
    test: list[int] = []
    for c in classes:
        rows = members[c]
        rng.shuffle(rows)
        test += rows[:quota[c]]
        train += rows[quota[c]:]
    return array("i", sorted(train)), array("i", sorted(test))


def _test_count(n_rows: int, test_size: float) -> int:
    if isinstance(test_size, float):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size {test_size} must be a fraction in (0, 1) or a count")
        n_test = math.ceil(test_size * n_rows)
    else:
        n_test = int(test_size)
    if not 0 < n_test < n_rows:
        raise ValueError(f"test_size {test_size} gives {n_test} test rows of {n_rows}; need at "
                         f"least one row in each split")
    return n_test
