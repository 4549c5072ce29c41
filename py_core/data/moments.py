"""Running statistics of a numeric column, a chunk of floats at a time: what `Column.stats()`
gives (min, max, mean, std) and `Column.task` needs, without holding the column.

The mean is exact: the sum is kept as an expansion (floats whose exact sum is the values' exact
sum, `expansion`), so fsum(total) / n is math.fsum(values) / n, bit for bit. The std is the
two-pass value within each chunk (its mean, then the fsum of squared deviations), merged across
chunks around the exact mean by Chan, Golub and LeVeque's formula: the same bits as one pass over
a single chunk, within a few units in the last place otherwise. Three floats a chunk are kept
for it.
"""
from __future__ import annotations

import math
from array import array
from itertools import chain

from .table import CLASS_LEVELS, NAN


class Moments:
    """A numeric column's running statistics over chunks of floats (NaN for missing), and, for
    the first column (`index`), whether it can be the row index (`Table.index`). `budget`: for
    an unnamed first column, something with `allows(0, count)` that says whether the set of its
    values may grow to `count` (else `outgrown` is set and `unique` left to a later count)."""

    __slots__ = ("broken", "budget", "chunks", "hi", "levels", "lo", "missing", "n", "outgrown",
                 "seen", "sequence", "total", "unique")

    def __init__(self, budget=None, index: bool = False):
        self.n = self.missing = 0
        self.lo, self.hi = math.inf, -math.inf
        self.total: list[float] = []  # floats whose exact sum is the values' exact sum
        self.chunks = array("d")  # (count, mean, squared deviations from it) a chunk
        self.broken = False  # an infinity, or a sum past the float range: no mean, no std
        self.levels: set | None = set()  # distinct values while at most CLASS_LEVELS
        # The next value of 0..n-1 or 1..n (-1 before the first, None once not)
        self.sequence = -1 if index else None
        # All values distinct (an unnamed first column only): the values while they fit the
        # budget; `unique` once known, `outgrown` when the budget was too small to tell.
        self.budget, self.seen = budget, (set() if budget is not None else None)
        self.unique: bool | None = None
        self.outgrown = False

    def add(self, part: array) -> None:
        if self.sequence is not None:
            if self.sequence == -1:
                self.sequence = int(part[0]) if part[0] in (0.0, 1.0) else None
            if self.sequence is not None and part == array("d", range(
                    self.sequence, self.sequence + len(part))):
                self.sequence += len(part)
            else:
                self.sequence = None
        if self.seen is not None:
            self.seen.update(part)
            if len(self.seen) < self.n + self.missing + len(part):  # a repeat (or a NaN)
                self.seen, self.unique = None, False
            elif not self.budget.allows(0, len(self.seen)):
                self.seen, self.outgrown = None, True
        vals = part if math.isfinite(sum(part)) else array("d", [v for v in part if v == v])
        self.missing += len(part) - len(vals)
        if not vals:
            return
        self.n += len(vals)
        self.lo, self.hi = min(self.lo, min(vals)), max(self.hi, max(vals))
        if self.levels is not None:
            self.levels.update(vals)
            if len(self.levels) > CLASS_LEVELS:
                self.levels = None
        if not self.broken:
            self._sums(vals)

    def _sums(self, vals: array) -> None:
        try:
            s = math.fsum(vals)
            if not math.isfinite(s):
                raise OverflowError
            self.total = expansion(self.total + expansion(vals, s))
        except (OverflowError, ValueError):  # past the float range, or both infinities
            self.broken = True
            return
        mean = s / len(vals)
        dev = array("d", map((-mean).__add__, vals))
        self.chunks.extend((len(vals), mean, math.fsum(map(float.__mul__, dev, dev))))

    def settle(self) -> None:
        if self.seen is not None:
            self.unique, self.seen = len(self.seen) == self.n + self.missing, None

    @property
    def task(self) -> str:
        small = self.levels is not None and all(v.is_integer() for v in self.levels)
        return "classification" if small else "regression"

    def stats(self) -> dict:
        """Column.stats() of a numeric column: min, max, mean, std (n - 1, as pandas)."""
        if not self.n:
            return {"min": None, "max": None, "mean": None, "std": None}
        if self.broken:
            return {"min": self.lo, "max": self.hi, "mean": NAN, "std": NAN}
        mean = math.fsum(self.total) / self.n
        counts, means, squares = self.chunks[0::3], self.chunks[1::3], self.chunks[2::3]
        between = (k * (m - mean) * (m - mean) for k, m in zip(counts, means))
        ssd = math.fsum(chain(squares, between))
        var = ssd / (self.n - 1) if self.n > 1 else 0.0
        return {"min": self.lo, "max": self.hi, "mean": mean, "std": math.sqrt(var)}


def expansion(values, total: float | None = None) -> list[float]:
    """Floats whose exact sum is the exact sum of `values` (re-iterable): its correctly rounded
    value first (math.fsum's, `total` if given), then what is left, rounded, until nothing is."""
    terms = [math.fsum(values) if total is None else total]
    while rest := math.fsum(chain(values, [-t for t in terms])):
        terms.append(rest)
    return terms
