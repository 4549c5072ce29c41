"""Typed tables: a CSV's columns with inferred kinds, and the summary the page shows.

`parse_csv` reads with `reader.CsvSource` and converts each chunk of rows column by column, in
bulk (`array('d', map(float, column))`), falling back to a per-value path only for chunks with a
missing or non-numeric value. A column found non-numeric after the first chunk has its strings
read again in a second pass over the bytes (rare: numbers stored as floats cannot give back their
original spelling, and keeping every string would double the memory).
"""
from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from datetime import date
from operator import methodcaller

from ..errors import checker
from .reader import CsvSource, DataError, data_error
from .target import default_target

NAN = float("nan")
# Missing markers, after strip(): what R (NA), pandas (NaN, nan, None, <NA>), Excel (#N/A, empty),
# SQL exports (NULL, null) and SPSS/SAS/Stata (`.`) write, and a lone `-` as in printed tables.
MISSING = frozenset({"", "NA", "N/A", "n/a", "#N/A", "#NA", "<NA>", "NaN", "nan", "-NaN", "-nan",
                     "null", "NULL", "None", ".", "-"})
_MISSING_BYTES = frozenset(m.encode() for m in MISSING)
BOOLEANS = {"TRUE": "TRUE", "FALSE": "FALSE", "True": "TRUE", "False": "FALSE",
            "true": "TRUE", "false": "FALSE"}  # spelling -> the stored value
DATE_PARTS = ("year", "month", "day", "weekday")  # what a date column expands to on request
MISSING_CATEGORY = "(missing)"  # the label of a categorical column's missing values
CATEGORY_MIN = 20  # a non-numeric column with at most max(CATEGORY_MIN, ...
CATEGORY_FRACTION = 0.05  # ... CATEGORY_FRACTION * rows) distinct values is categorical, else text
CLASS_LEVELS = 20  # integer-valued numeric column with at most this many values: a class target
KINDS = ("numeric", "categorical", "boolean", "date", "datetime", "text")
CODED = ("categorical", "boolean")  # kinds whose values are features as ordinal codes
DATES = ("date", "datetime")  # left out of the default features; expandable to DATE_PARTS


class Column:
    """One column. `values`: array('d') with NaN for missing (numeric), or a list of str with None
    for missing (the other kinds; a boolean's values are 'FALSE' and 'TRUE'). `categories`: a
    categorical (or boolean) column's distinct values, sorted; the ordinal code of a value is its
    index there, and missing is len(categories). `format`: how a numeric column's numbers were
    written when not plainly ({'decimal': ',', 'thousands': '.'}), else None. `index`: True for
    the table's row-index column (see `Table.index`)."""

    __slots__ = ("_task", "categories", "format", "index", "kind", "n_missing", "name", "values")

    def __init__(self, name: str, kind: str, values, n_missing: int | None = None,
                 categories: list[str] | None = None, format: dict | None = None):
        if kind not in KINDS:
            raise ValueError(f"column kind {kind!r} is not one of {KINDS}")
        self.name, self.kind, self.values, self.categories = name, kind, values, categories
        if n_missing is None:
            n_missing = _count_nan(values) if kind == "numeric" else values.count(None)
        self.n_missing = n_missing
        self.format, self.index = format, False
        self._task: str | None = None

    @classmethod
    def numeric(cls, name: str, values) -> Column:
        return cls(name, "numeric", values if isinstance(values, array) else array("d", values))

    @classmethod
    def from_strings(cls, name: str, values: list[str | None], delimiter: str = ",") -> Column:
        """The kind of a column of non-missing strings and None, tried in this order: boolean
        (only TRUE/FALSE in any of BOOLEANS' spellings); numeric written with a decimal comma
        or thousands separators (`_separated_numbers`); date (YYYY-MM-DD or YYYY/MM/DD) or
        datetime (a date, `T` or a space, HH:MM[:SS[.fff]], optional Z or +HH:MM), every value
        a real calendar date; categorical if the distinct values number at most
        max(CATEGORY_MIN, CATEGORY_FRACTION * rows); else text."""
        distinct = set(values)
        distinct.discard(None)
        if not distinct:
            return cls(name, "text", values)
        if distinct <= BOOLEANS.keys():
            values = [None if v is None else BOOLEANS[v] for v in values]
            return cls(name, "boolean", values,
                       categories=sorted({BOOLEANS[v] for v in distinct}))
        numbers = _separated_numbers(distinct, delimiter)
        if numbers is not None:
            convert, fmt = numbers
            return cls(name, "numeric", array("d", [NAN if v is None else convert(v)
                                                    for v in values]), format=fmt)
        kind = _date_kind(distinct)
        if kind is not None:
            return cls(name, kind, values)
        limit = max(CATEGORY_MIN, int(CATEGORY_FRACTION * len(values)))
        if len(distinct) <= limit:
            return cls(name, "categorical", values, categories=sorted(distinct))
        return cls(name, "text", values)

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"Column({self.name!r}, {self.kind}, rows={len(self)}, missing={self.n_missing})"

    def codes(self) -> array:
        """A categorical column's ordinal codes as array('d'); missing is len(categories)."""
        if self.kind not in CODED:
            raise DataError(f"column {self.name!r} is {self.kind}, not categorical")
        index = {c: float(i) for i, c in enumerate(self.categories)}
        index[None] = float(len(self.categories))
        return array("d", map(index.__getitem__, self.values))

    def levels(self, limit: int) -> list | None:
        """Sorted distinct non-missing values, or None when there are more than `limit`."""
        if self.kind != "numeric":
            distinct = set(self.values)
            distinct.discard(None)
            return sorted(distinct) if len(distinct) <= limit else None
        seen: set[float] = set()
        for start in range(0, len(self.values), 4096):
            seen.update(self.values[start:start + 4096])
            if len(seen) > limit:
                seen = {v for v in seen if v == v}  # each NaN is a distinct set member
                if len(seen) > limit:
                    return None
        return sorted(v for v in seen if v == v)

    @property
    def task(self) -> str:
        """The task this column implies as a target: classification for categorical and text
        columns and for integer-valued numeric ones with at most CLASS_LEVELS values."""
        if self._task is None:
            if self.kind != "numeric":
                self._task = "classification"
            else:
                levels = self.levels(CLASS_LEVELS)
                small = levels is not None and all(v.is_integer() for v in levels)
                self._task = "classification" if small else "regression"
        return self._task

    def stats(self) -> dict:
        """{min, max, mean, std} for numeric (std with n - 1, as pandas), else
        {distinct, top, freq}; over the non-missing values."""
        if self.kind == "numeric":
            if _stats_kernel is not None and len(self.values) > _STATS_CHECK \
                    and isinstance(self.values, array):
                got = _kernel_stats(self.values)
                if got is not None:
                    return got
            vals = self.values if not self.n_missing else [v for v in self.values if v == v]
            if not vals:
                return {"min": None, "max": None, "mean": None, "std": None}
            mean = math.fsum(vals) / len(vals)
            dev = array("d", map((-mean).__add__, vals))
            var = math.fsum(map(float.__mul__, dev, dev)) / (len(vals) - 1) if len(vals) > 1 \
                else 0.0
            return {"min": min(vals), "max": max(vals), "mean": mean, "std": math.sqrt(var)}
        counts = Counter(self.values)
        counts.pop(None, None)
        top = counts.most_common(1)
        return {"distinct": len(counts), "top": top[0][0] if top else None,
                "freq": top[0][1] if top else 0}


    def date_part(self, part: str) -> Column:
        """A date or datetime column's `part` (one of DATE_PARTS; weekday 0 is Monday) as a
        numeric column named 'NAME.PART', NaN where the date is missing."""
        if self.kind not in DATES or part not in DATE_PARTS:
            raise DataError(f"column {self.name!r} is {self.kind}: no {part!r} part",
                            field=self.name)
        k = DATE_PARTS.index(part)
        out = array("d")
        for v in self.values:
            if v is None:
                out.append(NAN)
            else:
                y, m, d = int(v[:4]), int(v[5:7]), int(v[8:10])
                out.append((y, m, d, date(y, m, d).weekday())[k])
        return Column.numeric(f"{self.name}.{part}", out)


_stats_kernel = None  # the tab's web/colstats.js (`use_stats_kernel`), or None
_STATS_CHECK = 4096  # values the kernel's sums are checked on against math.fsum


def use_stats_kernel(kernel) -> None:
    """Let `kernel.moments(values, limit) -> [count, min, max, sum]` and
    `kernel.squares(values, mean, limit) -> sum of squared deviations` (web/colstats.js: exact
    sums correctly rounded, math.fsum's bits) summarise big numeric columns; each call is checked
    on the column's first _STATS_CHECK values against this module's own. None: Python only."""
    global _stats_kernel
    _stats_kernel = kernel


def _kernel_stats(values: array) -> dict | None:
    def moments(limit):  # a JavaScript Float64Array: floats, -0.0 kept
        count, lo, hi, total = _stats_kernel.moments(values, limit).to_py().tolist()
        return int(count), lo, hi, total

    def squares(mean, limit):
        return _stats_kernel.squares(values, mean, limit).to_py().tolist()[0]

    head = [v for v in values[:_STATS_CHECK] if v == v]
    count, lo, hi, total = moments(len(values) + 1)
    if not count:
        return {"min": None, "max": None, "mean": None, "std": None}
    mean = total / count
    ssd = squares(mean, len(values) + 1)
    if not (math.isfinite(total) and math.isfinite(ssd)):  # overflow: Python's own path says
        return None
    if head:  # the same sums on a prefix, by math.fsum
        hm = math.fsum(head) / len(head)
        want = (len(head), min(head), max(head), math.fsum(head))
        if repr(moments(len(head))) != repr(want) or \
                repr(squares(hm, len(head))) != repr(math.fsum((v - hm) * (v - hm) for v in head)):
            return None
    var = ssd / (count - 1) if count > 1 else 0.0
    return {"min": lo, "max": hi, "mean": mean, "std": math.sqrt(var)}


class Table:
    """Named columns of equal length. `delimiter` and `encoding`: how the CSV was read (None
    for generated tables). `index`: the name of the row-index column, or None: the first column
    when its header cell is empty (R's row names, `Unnamed: 0`) and its values are distinct and
    never missing, or when it holds the integers 1..n or 0..n-1 in order (in a table of three
    columns or more: with two, it is the only possible feature). An index column is
    shown but left out of the default features, and kept as the row id in predictions."""

    def __init__(self, name: str, columns: list[Column], delimiter: str | None = None,
                 encoding: str | None = None, index: str | None = None):
        lengths = {len(c) for c in columns}
        if len(lengths) > 1:
            raise ValueError(f"columns of {name} differ in length: {sorted(lengths)}")
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate column names in {name}")
        self.name, self.columns, self.delimiter = name, columns, delimiter
        self.encoding, self.index = encoding, index
        self.n_rows = lengths.pop() if lengths else 0
        self._by_name = {c.name: c for c in columns}
        for c in columns:
            c.index = c.name == index

    def __repr__(self) -> str:
        return f"Table({self.name!r}, rows={self.n_rows}, columns={self.names})"

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        """The column `name`; also 'DATE.PART' for a part (DATE_PARTS) of a date column."""
        if name not in self._by_name:
            base, _, part = name.rpartition(".")
            if part in DATE_PARTS and base in self._by_name \
                    and self._by_name[base].kind in DATES:
                return self._by_name[base].date_part(part)
            raise DataError(f"{self.name}: no column named {name!r}; the columns are "
                            f"{', '.join(map(repr, self.names))}", field=name)
        return self._by_name[name]

    def describe(self, preview_rows: int = 20) -> dict:
        """JSON-ready summary: name, rows, delimiter and encoding (None unless read from a CSV),
        index (the row-index column's name or None), columns (name, type, missing, task,
        stats, and `format` for numbers written with a decimal comma or thousands separators,
        `index` true for the index column), the first `preview_rows` rows (NaN as None) and
        target: the column suggested as the target (`target.default_target`) or None."""
        columns = []
        for c in self.columns:
            entry = {"name": c.name, "type": c.kind, "missing": c.n_missing, "task": c.task,
                     "stats": {k: _json_value(v) for k, v in c.stats().items()}}
            if c.format:
                entry["format"] = c.format
            if c.index:
                entry["index"] = True
            columns.append(entry)
        n = min(preview_rows, self.n_rows)
        preview = [[_json_value(c.values[i]) for c in self.columns] for i in range(n)]
        out = {"name": self.name, "rows": self.n_rows, "delimiter": self.delimiter,
               "encoding": self.encoding, "index": self.index, "columns": columns,
               "preview": preview}
        return dict(out, target=default_target(out))


def _json_value(v):
    """NaN becomes None; integral floats become ints, for a compact preview."""
    if isinstance(v, float):
        if v != v or v in (math.inf, -math.inf):
            return None
        if v.is_integer() and abs(v) < 2 ** 53:
            return int(v)
    return v


def parse_csv(data: bytes | bytearray | str, *, name: str = "data.csv",
              delimiter: str | None = None, strict: bool = True, progress=None,
              should_stop=None) -> Table:
    """Parse CSV bytes into a typed Table (a bytearray is read in place, not copied). Raises
    DataError; see `py_core.data` for the rules.
    `progress(fraction)` is called about every 1 MB of input and once with 1.0 at the end.
    `should_stop()` is asked as often, and between columns; True raises `Stopped`."""
    check = checker(should_stop)

    def report(fraction: float) -> None:
        if progress is not None:
            progress(fraction)
        check()

    source = CsvSource(data, name=name, delimiter=delimiter, strict=strict, progress=report)
    names, unnamed = _column_names(source)
    floats = _fast_numeric(source, len(names))
    strings: list[list | None] = [None] * len(names)
    if floats is not None:
        n_rows = len(floats[0])
    else:
        floats, n_rows = _read_columns(source, len(names), strings, strict)
    if n_rows == 0:
        raise data_error(name, "no data rows after the header", line=source.header_line)
    columns = []
    for col_name, f, s in zip(names, floats, strings):
        if f is not None:
            col = Column.numeric(col_name, f)
            if col.n_missing == n_rows:  # nothing but missing values: no use as a feature
                col = Column(col_name, "text", [None] * n_rows, n_missing=n_rows)
        else:
            col = Column.from_strings(col_name, s, source.delimiter)
        columns.append(col)
        check()
    return Table(name, columns, delimiter=source.delimiter, encoding=source.encoding,
                 index=_index_column(columns, unnamed))


def _read_columns(source: CsvSource, ncols: int, strings: list, strict: bool):
    """The general path: csv.reader's rows, converted column by column a chunk at a time."""
    floats: list[array | None] = [array("d") for _ in range(ncols)]  # None once non-numeric
    late: set[int] = set()  # found non-numeric after the first chunk: strings read again below
    n_rows = 0
    for chunk_index, rows in enumerate(source.chunks()):
        n_rows += len(rows)
        for j, col in enumerate(zip(*rows)):
            if floats[j] is not None:
                if _extend_floats(floats[j], col):
                    continue
                floats[j] = None
                if chunk_index:
                    late.add(j)
                    continue
                strings[j] = []
            if j not in late:
                strings[j].extend(_clean(col))
    if late:
        for j in late:
            strings[j] = []
        for rows in CsvSource(source.data, name=source.name, delimiter=source.delimiter,
                              strict=strict, progress=source.progress).chunks():
            for j in late:
                strings[j].extend(_clean([row[j] for row in rows]))
    return floats, n_rows


_FAST_STEP = 1 << 20  # bytes of the file the numeric fast path converts at a time
_JS_STEP = 1 << 23  # bytes the JavaScript parser reads a call (about 0.1 s: Stop between calls)
_numeric_parser = None  # the tab's JavaScript fast path (`use_numeric_parser`), or None


def use_numeric_parser(parse) -> None:
    """Let `parse(data, start, delimiter_byte, columns, stop, row) -> (rows, blanks) | None`
    read the plain numeric files `_fast_numeric` takes: the worker's web/csvparse.js, which
    reads the lines of data[start:stop] into the array('d') `columns` in place from row `row`
    on (same bits as float(); see there). It is called for a piece of about _JS_STEP bytes
    at a time. Its result is checked: the first and last 256 KB of rows against this module's
    own reading, the row count against the file's line ends; on any difference the general
    path reads the file. None restores the pure-Python path."""
    global _numeric_parser
    _numeric_parser = parse


def _fast_numeric(source: CsvSource, ncols: int) -> list[array] | None:
    """Every column as array('d'), read straight from the bytes, when the file is plain numbers:
    no quote, no CR but in CRLF, no '_', every line with ncols - 1 delimiters (blank lines
    skipped) and every field a finite float or a missing marker. Else None, having read nothing
    that counts: the general path then reads the file (and names any error). The result is the
    general path's, bit for bit: float() of the same characters."""
    data = source.data
    if ncols < 2 or len(data) < _FAST_STEP // 4 or b'"' in data or b"_" in data \
            or data.count(b"\r") != data.count(b"\r\n"):
        return None
    start = data.find(b"\n", _header_offset(data)) + 1
    if start == 0:
        return None
    if _numeric_parser is not None:
        return _checked_external(source, start, ncols)
    return _python_numeric(source, start, ncols)


def _python_numeric(source: CsvSource, start: int, ncols: int, stop: int | None = None,
                    report: bool = True) -> list[array] | None:
    data, delim = source.data, source.delimiter.encode()
    progress = source.progress if report else None
    cols = [array("d") for _ in range(ncols)]
    n, reported = len(data) if stop is None else stop, start
    while start < n:
        end = -1 if start + _FAST_STEP >= n else data.find(b"\n", start + _FAST_STEP, n)
        end = n if end < 0 else end + 1
        parts = numeric_lines(data[start:end], delim, ncols)
        start = end
        if parts is None:
            return None
        for col, part in zip(cols, parts):
            col.extend(part)
        if progress is not None and start - reported >= _FAST_STEP:
            reported = start
            progress(start / n)
    if progress is not None:
        progress(1.0)
    return cols


def numeric_lines(chunk: bytes, delim: bytes, ncols: int) -> list[array] | None:
    """Whole lines of a plain numeric file (`_fast_numeric`'s conditions) as one array('d') a
    column, blank lines skipped; None when a line has another number of fields or a field is
    neither a finite float nor a missing marker."""
    if b"\r" in chunk:
        chunk = chunk.replace(b"\r\n", b"\n")
    lines = chunk.split(b"\n")
    if b"" in lines:  # blank lines, and the empty piece after the last line end
        lines = [line for line in lines if line]
    if not lines:
        return [array("d") for _ in range(ncols)]
    if set(map(methodcaller("count", delim), lines)) != {ncols - 1}:
        return None
    fields = delim.join(lines).split(delim)
    parts = []
    for j in range(ncols):
        part = _bytes_floats(fields[j::ncols])
        if part is None:
            return None
        parts.append(part)
    return parts


def _checked_external(source: CsvSource, start: int, ncols: int) -> list[array] | None:
    data = source.data
    lines = data.count(b"\n", start) + (not data.endswith(b"\n"))
    cols = [array("d", [0.0]) * lines for _ in range(ncols)]
    rows = blanks = 0
    at = start
    while at < len(data):
        end = data.find(b"\n", at + _JS_STEP)
        end = len(data) if end < 0 else end + 1
        got = _numeric_parser(data, at, ord(source.delimiter), cols, end, rows)
        if got is None:
            return None
        more_rows, more_blanks = map(int, got)  # a JavaScript array in the tab
        rows, blanks, at = rows + more_rows, blanks + more_blanks, end
        if at < len(data) and source.progress is not None:
            source.progress(at / len(data))
    if rows + blanks != lines:
        return None
    for col in cols:
        del col[rows:]
    sample = _FAST_STEP // 4
    head_end = data.find(b"\n", min(len(data), start + sample))
    head_end = len(data) if head_end < 0 else head_end + 1
    head = _python_numeric(source, start, ncols, stop=head_end, report=False)
    tail_start = data.rfind(b"\n", start, max(start, len(data) - sample - 1)) + 1
    tail = _python_numeric(source, max(start, tail_start), ncols, report=False)
    if head is None or tail is None:
        return None
    for col, h, t in zip(cols, head, tail):
        if col[:len(h)].tobytes() != h.tobytes() or (t and col[-len(t):].tobytes() != t.tobytes()):
            return None
    if source.progress is not None:
        source.progress(1.0)
    return cols


def _header_offset(data: bytes) -> int:
    """Byte offset of the first non-blank line (the header), after a UTF-8 BOM."""
    pos = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    while pos < len(data) and data[pos] in b"\r\n":
        pos += 1
    return pos


def _bytes_floats(col: list[bytes]) -> array | None:
    try:
        part = array("d", map(float, col))
    except ValueError:
        part = array("d")
        append = part.append
        for v in col:
            try:
                append(float(v))
            except ValueError:
                if v.strip() not in _MISSING_BYTES:
                    return None
                append(NAN)
    if not math.isfinite(sum(part)) and any(map(math.isinf, part)):
        return None
    return part


def _column_names(source: CsvSource) -> tuple[list[str], list[bool]]:
    """Header names, stripped of surrounding whitespace; an empty one is named as pandas does,
    'Unnamed: I' (I the 0-based position). Duplicate names are errors. Also which were empty."""
    names = [h.strip() for h in source.header]
    unnamed = [not n for n in names]
    names = [n or f"Unnamed: {i}" for i, n in enumerate(names)]
    seen: dict[str, int] = {}
    for i, n in enumerate(names, 1):
        if n in seen:
            raise data_error(source.name, f"duplicate column name {n!r} in the header (also "
                             f"column {seen[n]})", line=source.header_line, column=i,
                             header=names)
        seen[n] = i
    return names, unnamed


def _index_column(columns: list[Column], unnamed: list[bool]) -> str | None:
    """The row-index column's name (see `Table`), or None."""
    if len(columns) < 2:
        return None
    first = columns[0]
    if first.n_missing:
        return None
    if first.kind == "numeric":
        n, values = len(first), first.values
        if len(columns) > 2 and n and values[0] in (0.0, 1.0) \
                and values == array("d", range(int(values[0]), int(values[0]) + n)):
            return first.name  # with two columns it is the only possible feature: not an index
        if unnamed[0] and len(set(values)) == n:
            return first.name
        return None
    if unnamed[0] and len(set(first.values)) == len(first):
        return first.name
    return None


def _count_nan(values) -> int:
    if isinstance(values, array) and values.typecode == "d":
        total = sum(values)
        if total == total:  # no NaN (nor inf - inf)
            return 0
    return sum(1 for v in values if v != v)


_DECIMAL_COMMA = re.compile(r"[+-]?(?:\d{1,3}(?:\.\d{3})+|\d+)(?:,\d+)?(?:[eE][+-]?\d+)?\Z")
_THOUSANDS_COMMA = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
_DOT_THEN_COMMA = re.compile(r"\.\d{3},")


def _separated_numbers(distinct: set[str], delimiter: str):
    """(convert, format) when every value is a number written with a decimal comma or with
    thousands separators, unambiguously; else None. See `SeparatedNumbers`."""
    marks = SeparatedNumbers()
    marks.add(distinct)
    return marks.reading(delimiter)


class SeparatedNumbers:
    """What decides whether a column's values are numbers written with separators, gathered
    over batches of its distinct values (`add`); `reading(delimiter)` then decides:
    - decimal comma (thousands '.' optional: `1,5`, `-0,25`, `1.234,5`): when the delimiter
      is ';' or tab, or whatever the delimiter when some value has both (`1.234,5`);
    - thousands ',' with a decimal point (`1,234.5`, `12,000`): otherwise, when every
      comma is followed by exactly three digits.
    At least one value must have a comma; a column of `1.234` alone is plain decimals."""

    __slots__ = ("comma", "decimal", "dot", "dot_comma", "thousands")

    def __init__(self):
        self.decimal = self.thousands = True  # every value so far reads so
        self.comma = self.dot = self.dot_comma = False  # some value so far has one

    @property
    def possible(self) -> bool:
        return self.decimal or self.thousands

    def add(self, values) -> None:
        """Take in more distinct values (a collection of non-missing strings)."""
        if self.decimal:
            self.decimal = all(map(_DECIMAL_COMMA.match, values))
        if self.thousands:
            self.thousands = all(map(_THOUSANDS_COMMA.match, values))
        if self.possible:  # the marks below matter only while a reading is possible
            self.comma = self.comma or any("," in v for v in values)
            self.dot = self.dot or any("." in v for v in values)
            self.dot_comma = self.dot_comma or any(map(_DOT_THEN_COMMA.search, values))

    def reading(self, delimiter: str):
        """(convert, format) for the values taken in, or None."""
        if not self.comma:
            return None
        if self.decimal and (delimiter in ";\t" or self.dot_comma):
            return decimal_comma_float, {"decimal": ",", **({"thousands": "."} if self.dot else {})}
        if self.thousands:
            return thousands_comma_float, {"thousands": ","}
        return None


def decimal_comma_float(v: str) -> float:
    """`1.234,5` -> 1234.5 (a value _DECIMAL_COMMA matches)."""
    return float(v.replace(".", "").replace(",", "."))


def thousands_comma_float(v: str) -> float:
    """`1,234.5` -> 1234.5 (a value _THOUSANDS_COMMA matches)."""
    return float(v.replace(",", ""))


_DATE = re.compile(r"(\d{4})([-/])(\d{2})\2(\d{2})\Z")
_DATETIME = re.compile(r"(\d{4})([-/])(\d{2})\2(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?"
                       r"(?:Z|[+-]\d{2}:?\d{2})?\Z")


def _date_kind(distinct: set[str]) -> str | None:
    """'date' when every value is a calendar date, 'datetime' when every value is a date with a
    time (a few dates without time among them allowed), else None."""
    kind = "date"
    for v in distinct:
        m = _DATE.match(v)
        if m is None:
            m = _DATETIME.match(v)
            if m is None:
                return None
            kind = "datetime"
            hh, mm, ss = int(m.group(5)), int(m.group(6)), int(m.group(7) or 0)
            if hh > 23 or mm > 59 or ss > 60:
                return None
        try:
            date(int(m.group(1)), int(m.group(3)), int(m.group(4)))
        except ValueError:
            return None
    return kind


def _extend_floats(out: array, col: tuple[str, ...]) -> bool:
    """Append `col` as floats (missing as NaN) to `out`; False, appending nothing, if some
    non-missing value is not a finite number."""
    part = floats(col)
    if part is None:
        return False
    out.extend(part)
    return True


def floats(col) -> array | None:
    """`col`'s strings as array('d'), missing as NaN; None if some non-missing value is not a
    finite number (or has a '_': float() reads '1_000', a number in a CSV never has one)."""
    try:
        part = array("d", map(float, col))
    except ValueError:
        part = _floats_slow(col)
        if part is None:
            return None
    else:
        if "_" in "".join(col):
            return None
    if not math.isfinite(sum(part)) and any(map(math.isinf, part)):
        return None
    return part


def _floats_slow(col: tuple[str, ...]) -> array | None:
    out = array("d")
    append = out.append
    for v in col:
        try:
            x = float(v)
        except ValueError:
            if v.strip() in MISSING:
                append(NAN)
                continue
            return None
        if "_" in v:
            return None
        append(x)
    return out


def _clean(col) -> list[str | None]:
    """Strip surrounding whitespace; missing tokens become None."""
    return [None if s in MISSING else s for s in map(str.strip, col)]
