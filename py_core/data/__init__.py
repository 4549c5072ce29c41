"""The data layer: CSV in, typed Table out, then the models' matrices; splits; synthetic data.

Standard library only: the same code runs in the browser tab (Pyodide) and on the server.

    table = parse_csv(data, name="houses.csv")      # DataError (a ValueError) on a bad file
    table.describe()                                 # JSON-ready summary for the page
    prep = prepare(table, "price")                   # split, matrices, imputation

Policies
--------
Reading (`reader`). UTF-8 with or without BOM (else "not UTF-8 at byte N (line L)"); no NUL
bytes. Line ends CRLF, LF or CR. Delimiter chosen by the caller (one character, or 'tab' etc.)
or detected among `,` `;` tab `|`: the one that splits the first records of the first 64 KiB,
quote-aware, into the most fields, the same number on each record (ties in that order). RFC 4180
quoting, strictly: a quote must open and close a field; `ab"c` is an error unless strict=False;
`"ab"c` and a quote that never closes always are. Blank lines (no characters before the line
end) are skipped everywhere, in one-column files too: write a missing value there as `""` or
NA. The first non-blank record is the header; every row must have as many fields. Refused: a
field over 1,000,000 characters, a header over 10,000 columns, an empty file, a header without
rows, empty or duplicate column names (names are stripped of surrounding whitespace). Errors
are `DataError(message, line, column, field)`: line is the 1-based physical line of the file
where the bad record (or the bad quote) is, column the 1-based field index, field its header
name; the message says all that in words with the file's name and what was expected.

Types (`table`). Values are stripped of surrounding whitespace. Missing: empty, NA, N/A, NaN,
nan, null, NULL, None (in a numeric column also any other NaN spelling float() reads).
numeric: every non-missing value reads as a finite float (no '_' digit separators); stored as
array('d') with NaN for missing. categorical: otherwise, when the distinct non-missing values
number at most max(20, 5% of the rows). text: everything else, and columns with no value at
all; never a feature. Categorical values are encoded as ordinal codes by sorted category
(trees need no one-hot); missing is its own category "(missing)", coded len(categories).
Numeric missing values stay NaN in X; `MedianImputer` replaces them with the median of that
feature over the training rows only, and applies those medians to the test rows.

Targets (`features`). Task inferred unless given: a categorical or text target, or a numeric
one that is integer-valued with at most 20 distinct values, is classification; any other
numeric target is regression. Classes are the sorted distinct values, coded 0..k-1 (at most
1000 classes). Rows with a missing target are left out.

Splits and generators use `random.Random(seed)` only, so a seed means the same rows in the
browser and on the server.
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

__all__ = [
    "COLUMN_LIMIT", "DELIMITERS", "FIELD_LIMIT", "GENERATORS", "MISSING", "MISSING_CATEGORY",
    "Column", "DataError", "MedianImputer", "Prepared", "Table", "detect_delimiter",
    "features_and_target", "generate", "make_blobs", "make_friedman1", "make_moons",
    "make_regression", "make_spirals", "parse_csv", "prepare", "read_rows", "take_rows",
    "train_test_split",
]
