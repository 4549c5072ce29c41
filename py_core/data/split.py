"""Seeded train/test splits, the same in the browser (Pyodide) and on the server (CPython).

The permutation is `random.Random(seed).shuffle`'s. Pyodide is CPython, and shuffle's algorithm
(over `getrandbits`) has not changed since Python 3.2; tests pin a few outputs so that a change
would show. `shuffle` below gives the very same permutation several times faster (it draws the
generator's 32-bit words in bulk), and the split marks its rows in a byte mask rather than
sorting them, so that a million rows split in a fraction of a second.
"""
from __future__ import annotations

import math
import operator
import sys
from array import array
from collections import deque
from itertools import compress, repeat
from random import Random

_BLOCK = 1 << 14  # shuffle steps (or rows) between Stop checks: a few milliseconds
_WORD = "I" if array("I").itemsize == 4 else "L"  # an unsigned 32-bit array typecode


def train_test_split(n_rows: int, test_size: float = 0.2, seed: int = 42,
                     stratify=None, *, check=None) -> tuple[array, array]:
    """(train_idx, test_idx): array('i') of row indices, each sorted ascending.

    test_size: a fraction in (0, 1), giving ceil(test_size * n_rows) test rows as scikit-learn
    does, or a count. stratify: one class label per row (e.g. the class codes y); then each
    class is shuffled on its own (classes in sorted order, one Random for all) and gives
    floor(n_c * n_test / n_rows) test rows, the rows left over going to the classes with the
    largest remainders (ties: the smaller label), and no class gives away its last training row.
    check: called every few milliseconds of work (Stop: it raises).
    """
    mask = test_mask(n_rows, test_size, seed, stratify, check=check)
    return rows_of(mask, 0), rows_of(mask, 1)


def test_mask(n_rows: int, test_size: float = 0.2, seed: int = 42, stratify=None, *,
              check=None) -> bytearray:
    """`train_test_split`'s split as a bytearray of n_rows: 1 for a test row, 0 for a train row."""
    n_test = _test_count(n_rows, test_size)
    rng = Random(seed)
    mask = bytearray(n_rows)
    if stratify is None:
        order = list(range(n_rows))
        # The first n_test places are settled once the shuffle reaches them: the later steps
        # only swap within them, and this Random is not used again.
        shuffle(rng, order, settled=n_test, check=check)
        _mark(mask, order[:n_test], check)
        return mask
    labels = stratify if isinstance(stratify, (array, list)) else list(stratify)
    if len(labels) != n_rows:
        raise ValueError(f"stratify has {len(labels)} labels for {n_rows} rows")
    members = _members(labels, check)
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
    for k, c in enumerate(classes):
        rows = members[c]
        shuffle(rng, rows, settled=quota[c] if k == len(classes) - 1 else 0, check=check)
        _mark(mask, rows[:quota[c]], check)
    return mask


def rows_of(mask: bytes | bytearray, value: int, check=None) -> array:
    """The indices i with mask[i] == value (0 or 1), ascending, as array('i')."""
    return take(range(len(mask)), mask if value else flipped(mask), "i", check)


def flipped(mask: bytes | bytearray) -> bytes | bytearray:
    """A mask of 0 and 1 with the two swapped (a test mask's train rows)."""
    return mask.translate(_FLIP)


def take(values, flags: bytes | bytearray, typecode: str, check=None) -> array:
    """array(typecode) of the values whose flag is 1, in order; check is called every
    _BLOCK values."""
    out = array(typecode)
    for a in range(0, len(flags), _BLOCK):
        out.extend(compress(values[a:a + _BLOCK], flags[a:a + _BLOCK]))
        if check is not None:
            check()
    return out


_FLIP = bytes([1, 0]) + bytes(254)  # 0 <-> 1


def shuffle(rng: Random, x: list, *, settled: int = 0, check=None) -> None:
    """`rng.shuffle(x)`: the same permutation, and afterwards the same state of rng.

    random.shuffle swaps x[i] with x[randbelow(i + 1)] for i from len(x) - 1 down to 1, and
    randbelow(m) draws getrandbits(m.bit_length()) until the draw is below m; getrandbits(k)
    for k <= 32 is the generator's next 32-bit word shifted right by 32 - k. Here the words
    are drawn many at a time (getrandbits(32 * count) holds them, the first in the lowest 32
    bits), and at the end the generator is rewound to just after the last word used.
    settled: stop once the places below it are left (their set is then final; the order
    within them and the generator's state are not: use it only when neither matters).
    check: called between blocks of steps.
    """
    n = len(x)
    if n < 2:
        return
    state = rng.getstate()
    words: list[int] = []
    t = 0  # words used
    i = n - 1
    stop = max(settled - 1, 0)  # the loop ends after i == stop + 1
    while i > stop:
        k = (i + 1).bit_length()
        shift = 32 - k
        low = max((1 << (k - 1)) - 2, stop, i - _BLOCK)  # this block: i down to low + 1
        want = 2 * (i - low) + 64 - (len(words) - t)  # at most 2 draws a step on average
        if want > 0:
            words += _words(rng, want)
        try:
            for i in range(i, low, -1):
                r = words[t] >> shift
                t += 1
                while r > i:
                    r = words[t] >> shift
                    t += 1
                x[i], x[r] = x[r], x[i]
        except IndexError:  # out of words mid-step: that step's draws so far stay used
            words += _words(rng, 1024)
            continue
        i = low
        if check is not None:
            check()
    if not settled:
        rng.setstate(state)
        if t:
            rng.getrandbits(32 * t)


def _words(rng: Random, count: int) -> list[int]:
    words = array(_WORD, rng.getrandbits(32 * count).to_bytes(4 * count, "little"))
    if sys.byteorder == "big":
        words.byteswap()
    return words.tolist()


def _members(labels, check=None) -> dict:
    """{label: [row, ...]} with each class's rows ascending."""
    members: dict = {}
    appends = {}
    for c in set(labels):
        members[c] = []
        appends[c] = members[c].append
    for a in range(0, len(labels), _BLOCK):
        rows = range(a, min(len(labels), a + _BLOCK))
        deque(map(operator.call, map(appends.__getitem__, labels[a:rows.stop]), rows), maxlen=0)
        if check is not None:
            check()
    return members


def _mark(mask: bytearray, rows, check=None) -> None:
    for a in range(0, len(rows), _BLOCK):
        deque(map(mask.__setitem__, rows[a:a + _BLOCK], repeat(1)), maxlen=0)
        if check is not None:
            check()


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
