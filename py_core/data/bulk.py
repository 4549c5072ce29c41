"""Column work at C speed, for tables of a million rows: medians by byte planes, and the
row-major train and test matrices by runs of rows.

A Python loop step costs about as much as a C sort spends on a value, so a million-row column
is never walked value by value here. The work is done by the interpreter's own C loops:
`bytes` slicing and `translate`, `int.from_bytes` and big-integer bit operations (a big integer
is a bit vector: one bit a row), `bytes.join`, array slice assignment.

Order statistics (`median`): a float64's bits, with the sign bit flipped for positive numbers
and every bit flipped for negative ones, compare as an unsigned integer the way the numbers do
(-0.0 just below 0.0). So the k-th smallest value is found one byte at a time, most significant
first (a radix select): the rows' byte at one significance is one `bytes` object (a byte plane,
`raw[d::8]`), counting the candidate rows whose byte is below v is a `translate` and a `count`,
and keeping the candidates whose byte equals v is a `translate` and an AND. A sample's sorted
values guess each byte, so a level usually costs two counts; once a few thousand candidates are
left they are read out and sorted.
"""
from __future__ import annotations

import math
import struct
import sys
from array import array
from bisect import bisect_left
from itertools import accumulate, compress, count, repeat
from operator import add, mul

_LITTLE = sys.byteorder == "little"
_SAMPLE = 2048  # values sorted to guess each byte of an order statistic
_READ_OUT = 4096  # candidates read out and sorted rather than narrowed further
_ROW_BLOCK = 1 << 14  # rows interleaved and split at a time (Stop is checked between blocks)
# The top byte of the order-preserving key: sign bit set for positives, all bits flipped for
# negatives. Below the top byte a negative number's bytes are flipped (_FLIP), a positive's kept.
_KEY_TOP = bytes(b | 0x80 if b < 0x80 else 0xFF - b for b in range(256))
_FLIP = bytes(range(255, -1, -1))
_SAME = bytes(range(256))
# A NaN or an infinity: exponent bits all set (the top byte's low 7 bits, the next byte's high 4).
_EXP_TOP = bytes(int(b & 0x7F == 0x7F) for b in range(256))
_EXP_NEXT = bytes(int(b & 0xF0 == 0xF0) for b in range(256))


def _equal(v: int) -> bytes:
    return bytes(v) + b"\x01" + bytes(255 - v)


def median(values: array, keep: bytes | int | None = None) -> float:
    """The median of values[i] over the rows with keep[i] == 1 (all rows when keep is None),
    NaN left out, as `MedianImputer` has it: sorted(vals)[k // 2] for odd k, the mean of the
    two middle values for even k, 0.0 when there is none. Bit for bit what sorting gives, -0.0
    included. keep: bytes of 0 and 1, or the same as an int (bit 8i for row i: `rows_int`)."""
    values = values if isinstance(values, array) and values.typecode == "d" else array("d", values)
    planes = _Planes(values)
    cand = planes.ones() if keep is None else keep if isinstance(keep, int) else rows_int(keep)
    nan = planes.nan_rows()
    if nan is None:  # infinities: the keys would do, but this is the rare case
        return _median_sorted(values, keep)
    cand &= ~nan
    count = cand.bit_count()
    if count == 0:
        return 0.0
    ranks = sorted({(count - 1) // 2, count // 2})
    got = planes.select(cand, count, ranks)
    if got is None:
        return _median_sorted(values, keep)
    lo, hi = got[ranks[0]], got[ranks[-1]]
    return lo if count % 2 else (lo + hi) / 2


def rows_int(mask: bytes) -> int:
    """A bytes of 0 and 1 as a candidate set: an int with bit 8i set where mask[i] is 1."""
    return int.from_bytes(mask, "little")


def _median_sorted(values, keep) -> float:
    if isinstance(keep, int):
        keep = keep.to_bytes(len(values), "little")
    vals = sorted(v for v in (values if keep is None else compress(values, keep)) if v == v)
    k = len(vals)
    return 0.0 if k == 0 else (vals[k // 2] if k % 2 else (vals[k // 2 - 1] + vals[k // 2]) / 2)


class _Planes:
    """A float64 column's byte planes (made when first asked for), for radix selection."""

    def __init__(self, values: array):
        self.values, self.n = values, len(values)
        self.raw = values.tobytes()
        self._planes: dict[int, bytes] = {}

    def ones(self) -> int:
        """Every row, as a candidate set."""
        return rows_int(b"\x01" * self.n)

    def plane(self, level: int) -> bytes:
        """The rows' bytes of significance `level` (7: sign and exponent; 0: lowest)."""
        if level not in self._planes:
            self._planes[level] = self.raw[(level if _LITTLE else 7 - level)::8]
        return self._planes[level]

    def nan_rows(self) -> int | None:
        """The rows holding NaN, as a candidate set; None when some row holds an infinity."""
        top = self.plane(7).translate(_EXP_TOP)
        if 1 not in top:
            return 0
        odd = rows_int(top) & rows_int(self.plane(6).translate(_EXP_NEXT))  # NaN or infinity
        # An infinity's next byte is 0xF0 (a NaN's is that only with a low mantissa bit set).
        if odd & rows_int(self.plane(6).translate(_equal(0xF0))):
            if self.values.count(math.inf) or self.values.count(-math.inf):
                return None
        return odd

    def select(self, cand: int, count: int, ranks: list[int]) -> dict | None:
        """{rank: value} for ranks (0-based, ascending) among the candidate rows `cand` (bit
        8i: row i; `count` of them, none NaN), in sorting order. None when the answer is a zero
        and the candidates hold zeros of both signs: only a sort says which comes first."""
        sample = array("d", sorted(v for v in self.values[::max(1, self.n // _SAMPLE)] if v == v))
        out: dict[int, float] = {}
        self._descend(7, cand, count, 0, ranks, _Guide(sample.tobytes()), None, out)
        for v in out.values():
            if v == 0.0 and self._other_zero(cand, v):
                return None
        return out

    def _descend(self, level, cand, count, base, ranks, guide, top, out) -> None:
        """Fill out[r] for the ranks r, all in [base, base + count): the candidates `cand` are
        the rows of ranks base.. in key order, and share their key bytes above `level`. top:
        the key's top byte they share (None at level 7)."""
        while count > _READ_OUT and level >= 0:
            plane = self.plane(level)
            if plane == plane[:1] * self.n:  # every row has this byte: nothing to tell apart
                top = _KEY_TOP[plane[0]] if level == 7 else top
                level -= 1
                continue
            key = _KEY_TOP if level == 7 else _FLIP if top < 0x80 else _SAME
            level_counts = _Counts(plane, key, cand, count)
            seen = guide.digits(level, key)
            lo, hi = level_counts.bracket(ranks[0] - base, ranks[-1] - base,
                                          _guess(seen, (ranks[0] - base) / count),
                                          _guess(seen, (ranks[-1] - base) / count))
            below, inside = level_counts.below(lo), level_counts.between(lo, hi)
            if hi - lo > 1 and len(ranks) > 1 and inside.bit_count() > _READ_OUT:
                for r in ranks:  # they fall in different bytes: each its own way
                    self._descend(level, cand, count, base, [r], guide, top, out)
                return
            base, cand = base + below, inside
            count = level_counts.below(hi) - below
            if hi - lo > 1:  # few enough to read out, over several bytes
                break
            top = lo if level == 7 else top
            guide = guide.within(seen, lo)
            level -= 1
        vals = self._read_out(cand, level < 0)
        for r in ranks:
            out[r] = vals[min(r - base, len(vals) - 1)]

    def _read_out(self, cand: int, same: bool) -> list[float]:
        """The candidates' values, sorted (all equal when `same`: one is read)."""
        marks = cand.to_bytes(self.n, "little")
        if same:
            return [self.values[marks.index(1)]]
        return sorted(map(self.values.__getitem__, _positions(marks)))

    def _other_zero(self, cand: int, zero: float) -> bool:
        """Whether a candidate holds the zero of the other sign than `zero`."""
        other = struct.pack("<d", -zero if math.copysign(1.0, zero) > 0 else 0.0)
        for level in range(7, -1, -1):
            cand &= int.from_bytes(self.plane(level).translate(_equal(other[level])), "little")
            if not cand:
                return False
        return True


class _Counts:
    """One level of a radix select: how many candidates have a key byte below v (a count is a
    `translate`, an `int.from_bytes`, an AND and a `bit_count` over the whole plane)."""

    def __init__(self, plane: bytes, key: bytes, cand: int, count: int):
        self.plane, self.key, self.cand = plane, key, cand
        self._below = {0: 0, 256: count}
        self._rows = {0: 0, 256: cand}  # the candidates with a key byte below v

    def rows(self, v: int) -> int:
        if v not in self._rows:
            table = self.key.translate(b"\x01" * v + bytes(256 - v))  # raw byte -> key < v
            self._rows[v] = int.from_bytes(self.plane.translate(table), "little") & self.cand
        return self._rows[v]

    def below(self, v: int) -> int:
        if v not in self._below:
            self._below[v] = self.rows(v).bit_count()
        return self._below[v]

    def between(self, lo: int, hi: int) -> int:
        """The candidates whose key byte is in [lo, hi)."""
        return self.rows(hi) & ~self.rows(lo)

    def bracket(self, r0: int, r1: int, guess0, guess1) -> tuple[int, int]:
        """Bytes lo < hi with below(lo) <= r0 and r1 < below(hi): hi = lo + 1 (the byte that
        holds both ranks), or any bracket of at most _READ_OUT candidates, or, when the ranks
        fall in different bytes, lo the byte of r0 and hi - 1 that of r1. Guesses (from
        `_guess`) are counted first, then a binary search."""
        a, b = 0, 256  # the byte of r0 is in [a, b): below(a) <= r0 < below(b)
        c, d = 0, 256  # the byte of r1 is in [c, d)
        queue = [guess0[0], guess0[0] + 1, guess1[0], guess1[0] + 1]
        near = sorted({v + e for v in guess0[1] + guess1[1] for e in (0, 1)})  # bytes' bounds
        while True:
            if b - a == 1 and d - c == 1 or self.below(d) - self.below(a) <= _READ_OUT:
                return a, d
            queue = [v for v in queue if a < v < b or c < v < d]
            if queue:
                v = queue.pop(0)
            else:
                lo, hi = (a, b) if b - a > 1 else (c, d)
                inner = [v for v in near if lo < v < hi]
                # the byte just above a known bound is the likeliest, then the middle
                v = inner[len(inner) // 2] if inner else lo + 1 if lo + 1 not in self._below \
                    else (lo + hi) // 2
            got = self.below(v)
            if got <= r0:
                a = max(a, v)
            else:
                b = min(b, v)
            if got <= r1:
                c = max(c, v)
            else:
                d = min(d, v)


class _Guide:
    """A sorted sample of the column (raw float64 bytes), narrowed to the values that share
    the candidates' key bytes so far: where a rank's next byte probably is."""

    def __init__(self, raw: bytes, lo: int = 0, hi: int | None = None):
        self.raw, self.lo, self.hi = raw, lo, len(raw) // 8 if hi is None else hi

    def digits(self, level: int, key: bytes) -> bytes:
        """The sample's key bytes at `level`, ascending."""
        at = level if _LITTLE else 7 - level
        return self.raw[8 * self.lo + at:8 * self.hi:8].translate(key)

    def within(self, seen: bytes, d: int) -> _Guide:
        first = seen.find(d)
        if first < 0:
            return _Guide(self.raw, 0, 0)
        return _Guide(self.raw, self.lo + first, self.lo + seen.rfind(d) + 1)


def _guess(seen: bytes, fraction: float) -> tuple[int, list[int]]:
    """The sample's key byte at the `fraction` quantile, and the bytes it holds within three
    standard errors of that quantile (ascending)."""
    if not seen:
        return 0x80, []
    m = len(seen)
    at = min(m - 1, round(fraction * (m - 1)))
    spread = 2 + int(3 * math.sqrt(m * fraction * (1 - fraction)))
    return seen[at], sorted(set(seen[max(0, at - spread):at + spread + 1]))


def _positions(marks: bytes):
    """The indices of the 1 bytes in a bytes of 0 and 1 (an iterator): the lengths of the runs
    of 0 before each, summed, plus the 1s before it. C loops; no Python step for each."""
    gaps = marks.split(b"\x01")
    gaps.pop()
    return map(add, accumulate(map(len, gaps)), count())


def interleave(columns: list[array], start: int = 0, stop: int | None = None) -> array:
    """Rows start..stop of the columns (array('d') each) as one row-major array('d'),
    _ROW_BLOCK rows at a time so that the strided copies stay in the cache."""
    nf = len(columns)
    stop = len(columns[0]) if stop is None else stop
    out = array("d", [0.0]) * (nf * (stop - start))
    for a in range(start, stop, _ROW_BLOCK):
        b = min(stop, a + _ROW_BLOCK)
        block = out[nf * (a - start):nf * (b - start)]
        for j, col in enumerate(columns):
            block[j::nf] = col[a:b]
        out[nf * (a - start):nf * (b - start)] = block
    return out


def split_rows(columns: list[array], test: array, check=None) -> tuple[array, array]:
    """(X_train, X_test): the columns (array('d'), one value a row) as row-major matrices of
    the rows not in `test` and of the rows in it (`test`: ascending row indices, array('i')).

    Blocks of rows are interleaved and cut into runs of train rows and single test rows,
    joined as bytes: a Python step for each test row, none for each value. check: called
    between blocks."""
    nf, n = len(columns), len(columns[0]) if columns else 0
    rb = 8 * nf  # bytes a row
    n_test = len(test)
    X_train = array("d", [0.0]) * (nf * (n - n_test))
    X_test = array("d", [0.0]) * (nf * n_test)
    out_train, out_test = memoryview(X_train).cast("B"), memoryview(X_test).cast("B")
    at_train = at_test = 0
    for a in range(0, n, _ROW_BLOCK):
        b = min(n, a + _ROW_BLOCK)
        raw = interleave(columns, a, b).tobytes()
        rows = test[bisect_left(test, a):bisect_left(test, b)]
        starts = array("q", map(mul, map(add, rows, repeat(-a)), repeat(rb)))  # a test row's
        ends = array("q", map(add, starts, repeat(rb)))                         # bytes in raw
        got = b"".join(map(raw.__getitem__, map(slice, starts, ends)))
        out_test[at_test:at_test + len(got)] = got
        at_test += len(got)
        ends.insert(0, 0)  # train runs: from the end of one test row to the next's start
        starts.append(len(raw))
        got = b"".join(map(raw.__getitem__, map(slice, ends, starts)))
        out_train[at_train:at_train + len(got)] = got
        at_train += len(got)
        if check is not None:
            check()
    return X_train, X_test


def fill(values: array, value: float) -> array:
    """A copy of values (array('d')) with every NaN replaced by value."""
    out = array("d", values)
    nan = _Planes(values).nan_rows()
    if nan is None:
        return array("d", [value if v != v else v for v in values])
    for i in _positions(nan.to_bytes(len(values), "little")):
        out[i] = value
    return out
