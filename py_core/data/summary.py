"""A CSV file's summary, read as a stream: `parse_csv(...).describe()` without the table.

    summary = summarize_csv(path, name="houses.csv")   # DataError on a bad file, as parse_csv

The file is read a chunk of rows at a time by `reader.CsvSource` (the same encodings, dialect and
errors as `parse_csv`; a plain numeric file by `table`'s fast path, a megabyte at a time), and a
column keeps only running state: a numeric column its missing count, min, max, exact sum and per
chunk (count, mean, squared deviations) (`Moments`); any other column its distinct values with
their counts and what `Column.from_strings` decides its kind from (`_Strings`). Memory is a
chunk and the distinct values, never the file.

Distinct values are counted in one Counter a column until the columns hold DISTINCT_BUDGET of
them (each at least MIN_SHARE); the first column past its share grows on, any other one past it
is counted again afterwards in a pass of its own over the file (read again without the checks,
a few columns a pass while they fit in the largest count), unless its values turn out to be
numbers. Peak memory is thus about the largest column's distinct values plus DISTINCT_BUDGET
values plus a chunk. A column found not numeric after its first chunk is read again the same way
(as parse_csv reads it again).

Every field is `Table.describe()`'s, bit for bit, but `std`: the two-pass value within a chunk,
merged across chunks by Chan, Golub and LeVeque's formula around the exact mean: the same bits
for a file of one chunk, within a few units in the last place otherwise.
"""
from __future__ import annotations

from array import array
from collections import Counter
from itertools import filterfalse
from pathlib import Path

from . import table
from .moments import Moments
from .reader import CsvSource, data_error
from .target import default_target
from .table import (
    BOOLEANS,
    CATEGORY_FRACTION,
    CATEGORY_MIN,
    MISSING,
    NAN,
    SeparatedNumbers,
    _clean,
    _column_names,
    _date_kind,
    _header_offset,
    _json_value,
    decimal_comma_float,
    floats,
    numeric_lines,
    thousands_comma_float,
)

DISTINCT_BUDGET = 1 << 18  # distinct values counted at once, over all columns (~25 MB of words)
MIN_SHARE = 64  # ... at least this many a column: a boolean's six spellings always fit


def summarize_csv(path, *, name: str = "data.csv", delimiter: str | None = None,
                  strict: bool = True, preview_rows: int = 20) -> dict:
    """What `parse_csv(<the file's bytes>, ...).describe(preview_rows)` gives, reading the file
    at `path` a chunk at a time (see the module's docstring). Raises DataError as parse_csv."""
    path = Path(path)
    with open(path, "rb") as file:
        source = CsvSource(file, name=name, delimiter=delimiter, strict=strict)
        names, unnamed = _column_names(source)
        scan = _Scan(path, source, unnamed, preview_rows)
        if not scan.fast():
            scan.general()
    if scan.rows == 0:
        raise data_error(name, "no data rows after the header", line=source.header_line)
    scan.recount()
    columns = [_describe(n, state, scan.rows, source.delimiter)
               for n, state in zip(names, scan.states)]
    index = _index(columns, scan.states, unnamed, scan.rows, source.delimiter)
    if index is not None:
        columns[0]["index"] = True
    preview = [[_json_value(raw if not isinstance(raw, str) else state.value(raw))
                for state, raw in zip(scan.states, row)] for row in scan.preview]
    out = {"name": name, "rows": scan.rows, "delimiter": source.delimiter,
           "encoding": source.encoding, "index": index, "columns": columns, "preview": preview}
    return dict(out, target=default_target(out))


class _Budget:
    """Distinct values counted at once: `share` a column, but the first column past it (the
    `exempt` one) grows on; `dropped` the others past it: {column: (count, rows read then)}."""

    def __init__(self, ncols: int):
        self.share = max(MIN_SHARE, DISTINCT_BUDGET // ncols)
        self.exempt: int | None = None
        self.rows = 0  # rows read so far in the current pass
        self.dropped: dict[int, tuple[int, int]] = {}

    def allows(self, j: int, count: int) -> bool:
        if count <= self.share or self.exempt == j:
            return True
        if self.exempt is None:
            self.exempt = j
            return True
        self.dropped[j] = (count, self.rows)
        return False


class _Scan:
    """The passes over the file: the first (fast or general), then the columns found non-numeric
    late, then the distinct values that outgrew the budget. `states`: one a column, `_Floats`
    or `_Strings`; `preview`: the first rows (strings, or floats from the fast path)."""

    def __init__(self, path: Path, source: CsvSource, unnamed: list[bool], preview_rows: int):
        self.path, self.source, self.unnamed = path, source, unnamed
        self.ncols, self.preview_rows = len(unnamed), preview_rows

    def _start(self) -> None:
        self.rows, self.preview, self.budget = 0, [], _Budget(self.ncols)
        self.states: list = [_Floats(self._moments(j)) for j in range(self.ncols)]

    def _moments(self, j: int) -> Moments:
        index = j == 0 and self.ncols >= 2  # `Table.index` looks at the first column only
        return Moments(self.budget if index and self.unnamed[0] else None, index)

    def _strings(self, j: int) -> _Strings:
        return _Strings(self._moments(j), self._moments(j))

    def _keep_preview(self, rows: list) -> None:
        if len(self.preview) < self.preview_rows:
            self.preview.extend(rows[:self.preview_rows - len(self.preview)])

    def fast(self) -> bool:
        """The plain numeric file's path (`table._fast_numeric`'s conditions, checked a block at
        a time); False, having kept nothing, as soon as the file is not one."""
        src = self.source
        if self.ncols < 2 or src.size < table._FAST_STEP // 4 or src._codec != "utf-8-sig":
            return False
        self._start()
        delim = src.delimiter.encode()
        with open(self.path, "rb") as f:
            for block in _numeric_blocks(f):
                if block is None or b'"' in block or b"_" in block \
                        or block.count(b"\r") != block.count(b"\r\n"):
                    return False
                if not self.rows and numeric_lines(block[:block.find(b"\n") + 1], delim,
                                                   self.ncols) is None:
                    return False  # the first line says: not before splitting a megabyte
                parts = numeric_lines(block, delim, self.ncols)
                if parts is None:
                    return False
                for state, part in zip(self.states, parts):
                    state.moments.add(part)
                if len(self.preview) < self.preview_rows:
                    self._keep_preview(list(zip(*(p[:self.preview_rows] for p in parts))))
                self.rows += len(parts[0])
        return True

    def general(self) -> None:
        """csv.reader's rows, column by column a chunk at a time, as `table._read_columns`."""
        self._start()
        late = {}  # columns found non-numeric after the first chunk: read again as strings
        for i, rows in enumerate(self.source.chunks()):
            self.budget.rows = self.rows
            self._keep_preview(rows)
            for j, col in enumerate(zip(*rows)):
                if j in late:
                    continue
                state = self.states[j]
                if state.kind == "floats":
                    if state.add(col):
                        continue
                    if i:
                        late[j] = self._strings(j)
                        continue
                    state = self.states[j] = self._strings(j)
                state.add(col, self.budget, j)
            self.rows += len(rows)
        if late:
            self._again(late, lambda state, col, j: state.add(col, self.budget, j))
            for j, state in late.items():
                self.states[j] = state

    def recount(self) -> None:
        """Settle what was counted; count again the distinct values that outgrew the budget,
        where they are still needed, a few columns a pass: as many as fit in the largest count
        (or in DISTINCT_BUDGET)."""
        for state in self.states:
            state.settle()
        need = set()  # columns to count again
        for j, state in enumerate(self.states):
            if state.kind == "strings" and state.stats is None \
                    and state.reading(self.source.delimiter) is None:
                need.add(j)
        delimiter = self.source.delimiter
        first = _numeric(self.states[0], delimiter) if self.ncols >= 2 else None
        if first is not None and first.outgrown and not first.missing \
                and (self.ncols == 2 or first.sequence is None):
            need.add(0)  # are the first column's numbers all distinct (a row index)?
        if not need:
            return
        rows, dropped = self.rows, self.budget.dropped
        guess = {}  # distinct values each will hold, from how fast they came before the drop
        for j in need:
            count, seen = dropped.get(j, (rows, rows))
            guess[j] = min(rows, count * rows // max(1, seen))
        room = max(DISTINCT_BUDGET, *guess.values())
        group, held = [], 0
        for j in sorted(need, key=guess.__getitem__, reverse=True):
            if group and held + guess[j] > room:
                self._count(group, first)
                group, held = [], 0
            group.append(j)
            held += guess[j]
        self._count(group, first)

    def _count(self, group: list[int], first: Moments | None) -> None:
        """One pass counting the distinct values of `group`'s columns: a Counter of the strings,
        or for the first column's numbers a set; then only their stats are kept."""
        numbers = first is not None  # the first column is numeric: its values' set, else strings
        if 0 in group and numbers:
            convert = _converter(self.states[0], self.source.delimiter)
        trackers = {j: set() if j == 0 and numbers else Counter() for j in group}

        def feed(seen, col, j):
            if isinstance(seen, set):
                seen.update(map(convert, col))
            else:
                seen.update(_clean(col))

        self._again(trackers, feed)
        for j in group:
            seen = trackers.pop(j)
            if isinstance(seen, set):
                first.unique = len(seen) == self.rows
            else:
                self.states[j].stats = _distinct_stats(seen, False)

    def _again(self, trackers: dict, feed) -> None:
        """One more pass over the file for the columns in `trackers`: feed(tracker, col, j)."""
        self.budget.rows = 0
        with open(self.path, "rb") as file:
            for rows in self.source.again(file).chunks():
                for j, tracker in trackers.items():
                    feed(tracker, [row[j] for row in rows], j)
                self.budget.rows += len(rows)


def _numeric_blocks(f):
    """The file's lines after the header, about table._FAST_STEP bytes of whole lines at a time; None
    first when the file's head holds a quote or a lone CR (the header could span lines)."""
    head = f.read(table._FAST_STEP)
    start = _header_offset(head)
    end = head.find(b"\n", start) + 1
    while end == 0 and start < len(head):
        more = f.read(table._FAST_STEP)
        if not more:
            break
        head += more
        end = head.find(b"\n", start) + 1
    if end == 0 or b'"' in head[:end] or head.count(b"\r", 0, end) != head.count(b"\r\n", 0, end):
        yield None
        return
    rest = head[end:]
    while True:
        cut = rest.rfind(b"\n") + 1
        if cut:
            yield rest[:cut]
            rest = rest[cut:]
        more = f.read(table._FAST_STEP)
        if not more:
            break
        rest += more
    if rest:
        yield rest


class _Floats:
    """A column read as numbers: every value so far a finite float or missing."""

    kind = "floats"
    __slots__ = ("moments", "value")

    def __init__(self, moments: Moments):
        self.moments = moments
        self.value = None  # raw string -> the table's value, once the kind is known

    def add(self, col) -> bool:
        part = floats(col)
        if part is None:
            return False
        self.moments.add(part)
        return True

    def settle(self) -> None:
        self.moments.settle()


class _Strings:
    """A column of strings: its missing count, its distinct values with their counts while they
    fit the budget, and what `Column.from_strings` decides its kind from."""

    kind = "strings"
    __slots__ = ("boolean", "counts", "date", "decimal", "marks", "missing", "stats",
                 "thousands", "value")

    def __init__(self, decimal: Moments, thousands: Moments):
        self.missing = 0
        self.counts: Counter | None = Counter()  # in order of first appearance, as Counter(values)
        self.stats: dict | None = None  # distinct, top, freq: from `counts` once read
        self.boolean = True  # every value so far one of BOOLEANS' spellings
        self.date: str | None = "date"  # 'date' or 'datetime' while every value so far is one
        self.marks = SeparatedNumbers()
        self.decimal: Moments | None = decimal  # the values read with a decimal comma, and
        self.thousands: Moments | None = thousands  # with thousands commas, while they can be
        self.value = None

    def add(self, col, budget: _Budget, j: int) -> None:
        vals = _clean(col)
        self.missing += vals.count(None)
        checking = self.boolean or self.date is not None or self.marks.possible
        new = None  # the values not seen before (or this chunk's, once `counts` is dropped)
        if self.counts is not None:
            if checking:
                new = set(filterfalse(self.counts.__contains__, set(vals)))
            self.counts.update(vals)
            if not budget.allows(j, len(self.counts)):
                self.counts = None
        elif checking:
            new = set(vals)
        if new:
            new.discard(None)
        if new:
            self.boolean = self.boolean and new <= BOOLEANS.keys()
            if self.date is not None:
                kind = _date_kind(new)
                self.date = kind and ("datetime" if "datetime" in (kind, self.date) else "date")
            if self.marks.possible:
                self.marks.add(new)
        if not self.marks.decimal:
            self.decimal = None
        if not self.marks.thousands:
            self.thousands = None
        if self.decimal is not None or self.thousands is not None:
            distinct = set(vals)
            for moments, convert in ((self.decimal, decimal_comma_float),
                                     (self.thousands, thousands_comma_float)):
                if moments is not None:
                    moments.add(_converted(vals, distinct, convert))

    def settle(self) -> None:
        if self.counts is not None:
            self.stats, self.counts = _distinct_stats(self.counts, self.boolean), None
        for moments in (self.decimal, self.thousands):
            if moments is not None:
                moments.settle()

    def reading(self, delimiter: str):
        """(moments, convert, format) when the values are numbers written with separators."""
        reading = self.marks.reading(delimiter)
        if reading is None:
            return None
        convert, fmt = reading
        return (self.decimal if convert is decimal_comma_float else self.thousands), convert, fmt


def _converted(vals: list, distinct: set, convert) -> array:
    lookup = {v: convert(v) for v in distinct if v is not None}
    lookup[None] = NAN
    return array("d", map(lookup.__getitem__, vals))


def _distinct_stats(counts: Counter, boolean: bool) -> dict:
    """Column.stats() of a non-numeric column from its counts (None counted too)."""
    counts.pop(None, None)
    if boolean:
        spelled, counts = counts, Counter()
        for value, count in spelled.items():
            counts[BOOLEANS[value]] += count
    top = counts.most_common(1)
    return {"distinct": len(counts), "top": top[0][0] if top else None,
            "freq": top[0][1] if top else 0}


def _numeric(state, delimiter: str) -> Moments | None:
    """The moments of a column that is numeric (numbers with separators included), else None:
    a reading needs a comma, which no boolean has, so it makes the column numeric."""
    if state.kind == "floats":
        return state.moments if state.moments.n else None
    reading = state.reading(delimiter)
    return reading[0] if reading else None


def _converter(state, delimiter: str):
    """A raw value of a numeric column, never missing, as the table holds it."""
    if state.kind == "floats":
        return float
    convert = state.reading(delimiter)[1]
    return lambda raw: convert(raw.strip())


def _float_or_nan(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:  # a missing marker
        return NAN


def _describe(name: str, state, rows: int, delimiter: str) -> dict:
    """One column's entry of Table.describe(); `state.value` set to read a raw value."""
    if state.kind == "floats":
        moments = state.moments
        if not moments.n:  # nothing but missing values: no use as a feature
            state.value = lambda raw: None
            return {"name": name, "type": "text", "missing": rows, "task": "classification",
                    "stats": {"distinct": 0, "top": None, "freq": 0}}
        state.value = _float_or_nan
        return {"name": name, "type": "numeric", "missing": moments.missing,
                "task": moments.task, "stats": _json_stats(moments.stats())}
    stats, reading, show = state.stats, state.reading(delimiter), str
    if stats is not None and not stats["distinct"]:
        kind = "text"
    elif state.boolean:
        kind, show = "boolean", BOOLEANS.__getitem__
    elif reading is not None:
        moments, show, fmt = reading
        state.value = lambda raw: None if (v := raw.strip()) in MISSING else show(v)
        return {"name": name, "type": "numeric", "missing": moments.missing,
                "task": moments.task, "stats": _json_stats(moments.stats()), "format": fmt}
    elif state.date is not None:
        kind = state.date
    elif stats["distinct"] <= max(CATEGORY_MIN, int(CATEGORY_FRACTION * rows)):
        kind = "categorical"
    else:
        kind = "text"
    state.value = lambda raw: None if (v := raw.strip()) in MISSING else show(v)
    return {"name": name, "type": kind, "missing": state.missing, "task": "classification",
            "stats": _json_stats(stats)}


def _json_stats(stats: dict) -> dict:
    return {k: _json_value(v) for k, v in stats.items()}


def _index(columns: list[dict], states: list, unnamed: list[bool], rows: int,
           delimiter: str) -> str | None:
    """The row-index column's name, as `table._index_column` decides it, or None."""
    if len(columns) < 2 or columns[0]["missing"]:
        return None
    first = columns[0]
    if first["type"] == "numeric":
        moments = _numeric(states[0], delimiter)
        if len(columns) > 2 and moments.sequence is not None:
            return first["name"]
        return first["name"] if unnamed[0] and moments.unique else None
    return first["name"] if unnamed[0] and first["stats"]["distinct"] == rows else None
