"""Typed tables: a CSV's columns with inferred kinds, and the summary the page shows.

`parse_csv` reads with `reader.CsvSource` and converts each chunk of rows column by column, in
bulk (`array('d', map(float, column))`), falling back to a per-value path only for chunks with a
missing or non-numeric value. A column found non-numeric after the first chunk has its strings
read again in a second pass over the bytes (rare: numbers stored as floats cannot give back their
original spelling, and keeping every string would double the memory).
"""
from __future__ import annotations

import math
from array import array
from collections import Counter

from .reader import CsvSource, DataError, data_error

NAN = float("nan")
MISSING = frozenset({"", "NA", "N/A", "NaN", "nan", "null", "NULL", "None"})  # after strip()
MISSING_CATEGORY = "(missing)"  # the label of a categorical column's missing values
CATEGORY_MIN = 20  # a non-numeric column with at most max(CATEGORY_MIN, ...
CATEGORY_FRACTION = 0.05  # ... CATEGORY_FRACTION * rows) distinct values is categorical, else text
CLASS_LEVELS = 20  # integer-valued numeric column with at most this many values: a class target
KINDS = ("numeric", "categorical", "text")


class Column:
    """One column. `values`: array('d') with NaN for missing (numeric), or a list of str with None
    for missing (categorical, text). `categories`: a categorical column's distinct values, sorted;
    the ordinal code of a value is its index there, and missing is len(categories)."""

    __slots__ = ("name", "kind", "values", "n_missing", "categories", "_task")

    def __init__(self, name: str, kind: str, values, n_missing: int | None = None,
                 categories: list[str] | None = None):
        if kind not in KINDS:
            raise ValueError(f"column kind {kind!r} is not one of {KINDS}")
        self.name, self.kind, self.values, self.categories = name, kind, values, categories
        if n_missing is None:
            n_missing = (sum(1 for v in values if v != v) if kind == "numeric"
                         else values.count(None))
        self.n_missing = n_missing
        self._task: str | None = None

    @classmethod
    def numeric(cls, name: str, values) -> Column:
        return cls(name, "numeric", values if isinstance(values, array) else array("d", values))

    @classmethod
    def from_strings(cls, name: str, values: list[str | None]) -> Column:
        """Categorical if the distinct non-missing values are few enough, else text."""
        distinct = set(values)
        distinct.discard(None)
        limit = max(CATEGORY_MIN, int(CATEGORY_FRACTION * len(values)))
        if distinct and len(distinct) <= limit:
            return cls(name, "categorical", values, categories=sorted(distinct))
        return cls(name, "text", values)

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"Column({self.name!r}, {self.kind}, rows={len(self)}, missing={self.n_missing})"

    def codes(self) -> array:
        """A categorical column's ordinal codes as array('d'); missing is len(categories)."""
        if self.kind != "categorical":
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
            vals = self.values if not self.n_missing else [v for v in self.values if v == v]
            if not vals:
                return {"min": None, "max": None, "mean": None, "std": None}
            mean = math.fsum(vals) / len(vals)
            dev = [v - mean for v in vals]
            var = math.fsum(d * d for d in dev) / (len(vals) - 1) if len(vals) > 1 else 0.0
            return {"min": min(vals), "max": max(vals), "mean": mean, "std": math.sqrt(var)}
        counts = Counter(v for v in self.values if v is not None)
        top = counts.most_common(1)
        return {"distinct": len(counts), "top": top[0][0] if top else None,
                "freq": top[0][1] if top else 0}


class Table:
    """Named columns of equal length."""

    def __init__(self, name: str, columns: list[Column], delimiter: str | None = None):
        lengths = {len(c) for c in columns}
        if len(lengths) > 1:
            raise ValueError(f"columns of {name} differ in length: {sorted(lengths)}")
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate column names in {name}")
        self.name, self.columns, self.delimiter = name, columns, delimiter
        self.n_rows = lengths.pop() if lengths else 0
        self._by_name = {c.name: c for c in columns}

    def __repr__(self) -> str:
        return f"Table({self.name!r}, rows={self.n_rows}, columns={self.names})"

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        if name not in self._by_name:
            raise DataError(f"{self.name}: no column named {name!r}; the columns are "
                            f"{', '.join(map(repr, self.names))}", field=name)
        return self._by_name[name]

    def describe(self, preview_rows: int = 20) -> dict:
        """JSON-ready summary: name, rows, delimiter (None unless read from a CSV), columns
        (name, type, missing, task, stats) and the first `preview_rows` rows (NaN as None)."""
        columns = [{"name": c.name, "type": c.kind, "missing": c.n_missing, "task": c.task,
                    "stats": {k: _json_value(v) for k, v in c.stats().items()}}
                   for c in self.columns]
        n = min(preview_rows, self.n_rows)
        preview = [[_json_value(c.values[i]) for c in self.columns] for i in range(n)]
        return {"name": self.name, "rows": self.n_rows, "delimiter": self.delimiter,
                "columns": columns, "preview": preview}


def _json_value(v):
    """NaN becomes None; integral floats become ints, for a compact preview."""
    if isinstance(v, float):
        if v != v or v in (math.inf, -math.inf):
            return None
        if v.is_integer() and abs(v) < 2 ** 53:
            return int(v)
    return v


def parse_csv(data: bytes | str, *, name: str = "data.csv", delimiter: str | None = None,
              strict: bool = True, progress=None) -> Table:
    """Parse CSV bytes into a typed Table. Raises DataError; see `py_core.data` for the rules.
    `progress(fraction)` is called about every 1 MB of input and once with 1.0 at the end."""
    source = CsvSource(data, name=name, delimiter=delimiter, strict=strict, progress=progress)
    names = _column_names(source)
    floats: list[array | None] = [array("d") for _ in names]  # None once seen non-numeric
    strings: list[list | None] = [None] * len(names)
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
    if n_rows == 0:
        raise data_error(name, "no data rows after the header", line=source.header_line)
    if late:
        for j in late:
            strings[j] = []
        for rows in CsvSource(data, name=name, delimiter=source.delimiter,
                              strict=strict).chunks():
            for j in late:
                strings[j].extend(_clean([row[j] for row in rows]))
    columns = []
    for col_name, f, s in zip(names, floats, strings):
        if f is not None:
            col = Column.numeric(col_name, f)
            if col.n_missing == n_rows:  # nothing but missing values: no use as a feature
                col = Column(col_name, "text", [None] * n_rows, n_missing=n_rows)
        else:
            col = Column.from_strings(col_name, s)
        columns.append(col)
    return Table(name, columns, delimiter=source.delimiter)


def _column_names(source: CsvSource) -> list[str]:
    """Header names, stripped of surrounding whitespace; empty or duplicate names are errors."""
    names = [h.strip() for h in source.header]
    seen: dict[str, int] = {}
    for i, n in enumerate(names, 1):
        if not n:
            raise data_error(source.name, "empty column name in the header: give every column "
                             "a name", line=source.header_line, column=i)
        if n in seen:
            raise data_error(source.name, f"duplicate column name {n!r} in the header (also "
                             f"column {seen[n]})", line=source.header_line, column=i,
                             header=names)
        seen[n] = i
    return names


def _extend_floats(out: array, col: tuple[str, ...]) -> bool:
    """Append `col` as floats (missing as NaN) to `out`; False, appending nothing, if some
    non-missing value is not a finite number."""
    try:
        part = array("d", map(float, col))
    except ValueError:
        part = _floats_slow(col)
        if part is None:
            return False
    else:
        if "_" in "".join(col):  # float() reads '1_000'; a number in a CSV never has '_'
            return False
    if not math.isfinite(sum(part)) and any(map(math.isinf, part)):
        return False
    out.extend(part)
    return True


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
