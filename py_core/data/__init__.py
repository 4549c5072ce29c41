"""The data layer: CSV in, typed Table out, then the models' matrices; splits; synthetic data.

Standard library only: the same code runs in the browser tab (Pyodide) and on the server.

    table = parse_csv(data, name="houses.csv")      # DataError (a ValueError) on a bad file
    table.describe()                                 # JSON-ready summary for the page
    summarize_csv(path, name="houses.csv")           # the same, streamed from a file (server)
    prep = prepare(table, "price")                   # split, matrices, imputation

Policies
--------
Reading (`reader`). Encodings (`encoding`, named in `Table.encoding` and the summary):
UTF-16 with a byte-order mark, UTF-8 with or without BOM, else cp1252 (or latin-1 when no byte is
in 0x80-0x9f); only a file that is none of these is refused, naming the byte offset. No NUL
bytes. Line ends CRLF, LF or CR. Delimiter chosen by the caller (one character, or 'tab' etc.)
or detected among `,` `;` tab `|`: the one that splits the first records of the first 64 KiB,
quote-aware, into the most fields, the same number on each record (ties in that order). RFC 4180
quoting, strictly: a quote must open and close a field; `ab"c` is an error unless strict=False;
`"ab"c` and a quote that never closes always are. Blank lines (no characters before the line
end) are skipped everywhere, in one-column files too: write a missing value there as `""` or
NA. The first non-blank record is the header; every row must have as many fields. An empty
header cell is named as pandas names it, `Unnamed: I` (I its 0-based position). Refused: a
field over 1,000,000 characters, a header over 10,000 columns, an empty file, a header without
rows, duplicate column names (names are stripped of surrounding whitespace). Errors
are `DataError(message, line, column, field)`: line is the 1-based physical line of the file
where the bad record (or the bad quote) is, column the 1-based field index, field its header
name; the message says all that in words with the file's name and what was expected.

Types (`table`). Values are stripped of surrounding whitespace. Missing (`MISSING`): empty, NA,
N/A, n/a, #N/A, #NA, <NA>, NaN, nan, -NaN, -nan, null, NULL, None, `.` and `-` (R, pandas,
Excel, SQL, SPSS/SAS/Stata), and in a numeric column any other NaN spelling float() reads.
numeric: every non-missing value reads as a finite float (no '_' digit separators), or every
one is written with a decimal comma (`1,5`, `1.234,5`: when the delimiter is `;` or tab, or
whatever it is when a value has both separators) or with thousands commas (`1,234.5`, every
comma followed by three digits); `Column.format` says which. Stored as array('d') with NaN for
missing. boolean: only TRUE/FALSE (True/False, true/false), coded FALSE 0, TRUE 1. date and
datetime: ISO dates (YYYY-MM-DD or with `/`), with a time for datetime; not a feature unless
asked, then expanded to NAME.year, .month, .day, .weekday. categorical: otherwise, when the
distinct non-missing values number at most max(20, 5% of the rows). text: everything else, and
columns with no value at all; never a feature. Categorical values are encoded as ordinal codes
by sorted category (trees need no one-hot); missing is its own category "(missing)", coded
len(categories). Row index (`Table.index`): the first column, when its header cell is empty
(R's write.csv row names) and its values distinct, or when it holds 1..n or 0..n-1 in order
(tables of 3+ columns); shown, not a default feature, the row id of predictions.
Numeric missing values stay NaN in X; `MedianImputer` replaces them with the median of that
feature over the training rows only, and applies those medians to the test rows.
Plain numeric files take a fast path (`table._fast_numeric`: bytes split, float() per column;
in the tab web/csvparse.js), with the general path's result bit for bit.

Targets (`features`). Task inferred unless given: a categorical or text target, or a numeric
one that is integer-valued with at most 20 distinct values, is classification; any other
numeric target is regression. Classes are the sorted distinct values, coded 0..k-1 (at most
1000 classes). Rows with a missing target are left out (`info["n_dropped"]`; the forest job's
`rows`). The summary's `target` is the column suggested before anyone picks one (`target`): one
named like a target, else the last numeric or categorical column that is no id, never one mostly
missing or free text.

Splits use `random.Random(seed)`, generators that or counter-based streams of exact arithmetic
(`synthetic`), so a seed means the same rows in the browser and on the server.
"""
from .features import MedianImputer, Prepared, features_and_target, prepare, take_rows
from .reader import (
                     COLUMN_LIMIT,
                     DELIMITERS,
                     FIELD_LIMIT,
                     DataError,
                     detect_delimiter,
                     read_rows,
)
from .split import train_test_split
from .summary import summarize_csv
from .synthetic import (
                     GENERATORS,
                     generate,
                     make_blobs,
                     make_friedman1,
                     make_moons,
                     make_regression,
                     make_spirals,
)
from .table import MISSING, MISSING_CATEGORY, Column, Table, parse_csv
from .target import default_target

__all__ = [
    "COLUMN_LIMIT", "DELIMITERS", "FIELD_LIMIT", "GENERATORS", "MISSING", "MISSING_CATEGORY",
    "Column", "DataError", "MedianImputer", "Prepared", "Table", "default_target", "detect_delimiter",
    "features_and_target", "generate", "make_blobs", "make_friedman1", "make_moons",
    "make_regression", "make_spirals", "parse_csv", "prepare", "read_rows", "summarize_csv",
    "take_rows", "train_test_split",
]
