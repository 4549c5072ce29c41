"""py_core.data.reader: the raw CSV layer, against two public corpora and our own error cases."""

import json
from pathlib import Path

import pytest

from py_core.data import DataError, detect_delimiter, parse_csv, read_rows
from py_core.data.reader import FIELD_LIMIT

DATA = Path(__file__).resolve().parent / "data"  # tests/data/README.md: what and from where
SPECTRUM = DATA / "csv-spectrum"
TEST_DATA = DATA / "csv-test-data"  # fetched by make test-deps (tools/fetch_test_data.py)


def _cases(folder: Path, pattern: str) -> list[str]:
    return sorted(p.stem for p in folder.glob(pattern)) if folder.is_dir() else []


needs_spectrum = pytest.mark.skipif(not SPECTRUM.is_dir(),
                                    reason=f"csv-spectrum corpus not found at {SPECTRUM}")
needs_test_data = pytest.mark.skipif(not TEST_DATA.is_dir(),
                                     reason=f"csv-test-data corpus not at {TEST_DATA}: make test-deps "
                                            "(tools/fetch_test_data.py) fetches it")


def error_of(data, **kw) -> DataError:
    with pytest.raises(DataError) as info:
        read_rows(data, **kw)
    return info.value


# --- csv-spectrum: NAME.csv with NAME.json, a list of objects keyed by the header ---

@needs_spectrum
@pytest.mark.parametrize("case", [c for c in _cases(SPECTRUM, "*.csv")
                                  if c != "location_coordinates"])
def test_csv_spectrum(case):
    header, rows = read_rows((SPECTRUM / f"{case}.csv").read_bytes(), name=f"{case}.csv")
    expected = json.loads((SPECTRUM / f"{case}.json").read_text(encoding="utf-8"))
    assert [dict(zip(header, row)) for row in rows] == expected


@needs_spectrum
def test_csv_spectrum_location_coordinates():
    # Its JSON is known wrong upstream. The CSV has bare quotes (seconds marks) inside an unquoted
    # field: strict mode names the place, strict=False reads the values as written.
    data = (SPECTRUM / "location_coordinates.csv").read_bytes()
    err = error_of(data, name="location_coordinates.csv")
    assert (err.line, err.column, err.field) == (2, 2, "Location Coordinates")
    header, rows = read_rows(data, strict=False)
    assert header == ["Contact Phone Number", "Location Coordinates", "Cities", "Counties"]
    assert rows == [["2095257564", "37\ufffd36'37.8\"N 121\ufffd2'17.9\"W", "Modesto",
                     "Stanislaus"]]


# --- csv-test-data: csv/NAME.csv with json/NAME.json (arrays of arrays; header-* objects) ---

# Blank-line policy (py_core.data): blank lines are skipped everywhere, one-column files too.
# So these two upstream expectations ([[""], [""]] and [["foo"], [""]]) differ from ours:
BLANK_LINE_CASES = {"all-empty", "empty-one-column"}


@needs_test_data
@pytest.mark.parametrize("case", [c for c in _cases(TEST_DATA / "csv", "*.csv")
                                  if not c.startswith("bad-") and c not in BLANK_LINE_CASES])
def test_csv_test_data(case):
    header, rows = read_rows((TEST_DATA / "csv" / f"{case}.csv").read_bytes())
    expected = json.loads((TEST_DATA / "json" / f"{case}.json").read_text(encoding="utf-8"))
    if case.startswith("header-"):
        assert [dict(zip(header, row)) for row in rows] == expected
    else:
        assert [header, *rows] == expected


@needs_test_data
def test_csv_test_data_blank_lines_follow_our_policy():
    with pytest.raises(DataError, match="no header"):
        read_rows((TEST_DATA / "csv" / "all-empty.csv").read_bytes())
    assert read_rows((TEST_DATA / "csv" / "empty-one-column.csv").read_bytes()) == (["foo"], [])
    with pytest.raises(DataError, match="no data rows") as info:
        parse_csv((TEST_DATA / "csv" / "empty-one-column.csv").read_bytes())
    assert info.value.line == 1


BAD = {  # expected (line, column, words in the message) for each bad-* file, read as a table
    "bad-header-less-fields": (2, 3, "2 fields, expected 3"),
    "bad-header-more-fields": (2, 4, "4 fields, expected 3"),
    "bad-header-no-header": (None, None, "no header"),
    "bad-header-wrong-header": (1, None, "no data rows"),
    "bad-missing-quote": (2, 2, "unterminated quote"),
    "bad-quotes-with-unescaped-quote": (2, 2, "unescaped quote in a quoted field"),
    "bad-unescaped-quote": (2, 2, "unescaped quote in an unquoted field"),
}


@needs_test_data
@pytest.mark.parametrize("case", _cases(TEST_DATA / "csv", "bad-*.csv"))
def test_csv_test_data_bad(case):
    line, column, words = BAD[case]
    with pytest.raises(DataError) as info:
        parse_csv((TEST_DATA / "csv" / f"{case}.csv").read_bytes(), name=f"{case}.csv")
    err = info.value
    assert (err.line, err.column) == (line, column)
    assert words in err.message and f"{case}.csv" in err.message
    if line is not None:
        assert f"line {line}" in err.message


# --- our own cases: one for each error kind, with line and column ---

@pytest.mark.parametrize("data, line, column, field, words", [
    (b"a,b,c\n1,2,3\n4,5\n", 3, 3, "c", "row has 2 fields, expected 3 like the header on line 1"),
    (b"a,b,c\n1,2,3\n\n\n4,5,6,7\n", 5, 4, None, "4 fields, expected 3"),
    (b'a,b\n1,"two\nlines"\n3,4,5\n', 4, 3, None, "3 fields"),  # line numbers count the newline
    (b'a,b\n1,"x\n2,3\n', 2, 2, "b", "unterminated quote"),
    (b'a,b\n1,2\n3,"x""\n', 3, 2, "b", "unterminated quote"),  # "" is data, not a close
    (b'a,b\n1,ab"c\n', 2, 2, "b", "unescaped quote in an unquoted field"),
    (b'a,b\n "x",1\n', 2, 1, "a", "unescaped quote in an unquoted field"),
    (b'a,b\n1,"ab"c\n', 2, 2, "b", "found 'c'"),
    (b'a,b\n1,"multi\nline"x\n', 3, 2, "b", "unescaped quote in a quoted field"),
    (b'a;b\r2;"x" \r', 2, 2, "b", "expected ';' or a line end"),
    (b'\n\r\na,"b\n1,2\n', 3, 2, None, "unterminated quote"),  # in the header, after blanks
    (b'\n\na,b"\n1,2\n', 3, 2, None, "unescaped quote in an unquoted field"),
])
def test_error_location(data, line, column, field, words):
    err = error_of(data, name="t.csv")
    assert (err.line, err.column, err.field) == (line, column, field)
    assert words in err.message and err.message.startswith("t.csv, line")
    assert err.to_dict() == {"message": err.message, "line": line, "column": column,
                             "field": field}


def test_errors_past_the_first_chunk_name_the_right_line():
    rows = "".join(f"{i},{i}\n" for i in 200_000 * [1])
    err = error_of(f"a,b\n{rows}1,2,3\n")
    assert err.line == 200_002 and "3 fields" in err.message
    err = error_of(f"a,b\n{rows}1,x\"\n")
    assert (err.line, err.column) == (200_002, 2)


def test_fitting_no_encoding_names_byte_and_line():
    # not UTF-8 at byte 13 (latin-1 would do), but 0x81 at byte 17 is no cp1252 character
    err = error_of(b"a,b\n1,2\n3,caf\xe9\n4,\x81\n")
    assert err.line == 4 and "not UTF-8 at byte 13" in err.message
    assert "byte 0x81 at byte offset 17" in err.message and err.message.startswith("data.csv")


def test_nul_byte_refused():
    err = error_of(b"a,b\n1,2\n3,\x004\n")
    assert err.line == 3 and "NUL" in err.message


def test_no_header_and_no_rows():
    assert "no header" in error_of(b"").message
    assert "no header" in error_of(b"\r\n\n\r").message
    assert read_rows(b"a,b\n") == (["a", "b"], [])
    with pytest.raises(DataError, match="no data rows") as info:
        parse_csv(b"\n\na,b\n\n")
    assert info.value.line == 3  # the header's line


@pytest.mark.parametrize("data, column, words", [
    (b"a,,Unnamed: 1\n1,2,3\n", 3, "duplicate column name 'Unnamed: 1'"),
    (b"a,b,a\n1,2,3\n", 3, "duplicate column name 'a' in the header (also column 1)"),
    (b"a,b, a \n1,2,3\n", 3, "duplicate column name 'a'"),
])
def test_header_names(data, column, words):
    with pytest.raises(DataError) as info:
        parse_csv(data)
    assert (info.value.line, info.value.column) == (1, column) and words in info.value.message


def test_field_limit():
    ok = "x" * 200_000
    assert read_rows(f'a,b\n1,"{ok}"\n2,{ok}\n'.encode())[1][1][1] == ok
    big = "x" * (FIELD_LIMIT + 1)
    for data in (f"a,b\n1,2\n3,{big}\n", f'a,b\n1,2\n3,"{big}"\n'):
        err = error_of(data)
        assert (err.line, err.column) == (3, 2) and "1,000,000 characters" in err.message
    err = error_of(f'a,b\n1,2\n3,"{big}\n'.replace("x" * 1000, "x" * 999 + "\n"))
    assert (err.line, err.column) == (3, 2) and "closing quote" in err.message


def test_column_limit():
    header = ",".join(f"c{i}" for i in range(10_001))
    assert "10,000" in error_of(f"{header}\n").message
    header = ",".join(f"c{i}" for i in range(10_000))
    assert len(read_rows(f"{header}\n{',' * 9_999}\n")[0]) == 10_000


# --- line ends, BOM, blank lines, quoting ---

@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_ends(eol):
    text = eol.join(["a,b", "1,2", '"x', 'y",3', "4,5"]) + eol
    header, rows = read_rows(text.encode())
    assert rows == [["1", "2"], [f"x{eol}y", "3"], ["4", "5"]]
    assert error_of(text + "6" + eol).line == 6


def test_mixed_line_ends_and_cr_only_line_numbers():
    assert read_rows(b"a,b\r1,2\r\n3,4\n5,6")[1] == [["1", "2"], ["3", "4"], ["5", "6"]]
    assert error_of(b"a,b\r1,2\r\r3\r").line == 4


def test_bom():
    assert read_rows(b"\xef\xbb\xbfa,b\n1,2\n") == (["a", "b"], [["1", "2"]])
    assert parse_csv(b"\xef\xbb\xbfid;x\n1;2\n").names == ["id", "x"]


def test_blank_lines_are_skipped_everywhere():
    assert read_rows(b"\n\na,b\n\n1,2\r\n\r\n3,4\n\n\n") == (["a", "b"], [["1", "2"], ["3", "4"]])
    assert read_rows(b'x\n1\n\n""\n2\n') == (["x"], [["1"], [""], ["2"]])


def test_quoted_fields():
    data = b'a,b,c\n"1,5","say ""hi""","two\r\nlines"\n"",x,""""\n'
    assert read_rows(data)[1] == [["1,5", 'say "hi"', "two\r\nlines"], ["", "x", '"']]


def test_strict_false_only_relaxes_quotes_inside_unquoted_fields():
    assert read_rows(b'h,w\n5\'10",80\n', strict=False)[1] == [["5'10\"", "80"]]
    assert "quoted field" in error_of(b'a\n"x"y\n', strict=False).message
    assert "unterminated" in error_of(b'a\n"x\n', strict=False).message


# --- delimiters ---

@pytest.mark.parametrize("delim", [",", ";", "\t", "|"])
def test_delimiter_detected(delim):
    text = delim.join(["a", "b", "c"]) + "\n" + delim.join(["1", "2", "3"]) + "\n"
    assert detect_delimiter(text) == delim
    assert parse_csv(text.encode()).delimiter == delim


def test_delimiter_detection_is_quote_aware():
    # Decimal commas with ';' separators; commas inside quotes; a '|' only inside quotes.
    assert detect_delimiter("a;b\n1,5;2,5\n3,0;4,0\n") == ";"
    assert detect_delimiter('name,notes\n"Doe; John","a;b;c"\n"x","y"\n') == ","
    assert detect_delimiter('a\tb\n"x|y|z"\t1\n') == "\t"
    assert detect_delimiter("single\n1\n2\n") == ","


def test_delimiter_chosen():
    assert read_rows(b"a;b\n1,5;2\n", delimiter=";")[1] == [["1,5", "2"]]
    assert read_rows(b"a\tb\n1\t2\n", delimiter="tab")[0] == ["a", "b"]
    assert read_rows(b"a,b\n1,2\n", delimiter="\\t")[0] == ["a,b"]
    with pytest.raises(DataError, match="delimiter"):
        read_rows(b"a,b\n", delimiter='"')
    with pytest.raises(DataError, match="delimiter"):
        read_rows(b"a,b\n", delimiter=",,")


def test_progress_reported_about_every_megabyte():
    row = ",".join(["1.25"] * 10) + "\n"
    data = (",".join(f"c{i}" for i in range(10)) + "\n" + row * 100_000).encode()  # 5 MB
    seen = []
    parse_csv(data, progress=seen.append)
    assert 4 <= len(seen) <= 7 and seen == sorted(seen) and seen[-1] == 1.0


# --- properties: round trip through csv.writer; the locating scanner agrees with csv.reader ---

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_cell = st.text(alphabet='ab ,;"\r\né|\t', max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4).flatmap(lambda k: st.lists(
    st.lists(_cell, min_size=k, max_size=k), min_size=2, max_size=6)),
    st.sampled_from(["\n", "\r\n", "\r"]))
def test_round_trip_through_csv_writer(table, eol):
    import csv
    import io
    out = io.StringIO()  # csv.writer quotes only the line-end characters of its lineterminator
    csv.writer(out, lineterminator="\r\n").writerows(table)
    text = out.getvalue()
    cells = "".join(map("".join, table))
    if "\r" not in cells and "\n" not in cells:  # then every CRLF is a row's end
        text = text.replace("\r\n", eol)
    try:
        header, rows = read_rows(text.encode(), delimiter=",")
    except DataError as e:  # only a header with an empty name
        pytest.fail(str(e))
    assert [header, *rows] == table


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='a,"\r\n', max_size=30))
def test_scanner_agrees_with_csv_reader(text):
    import csv
    import io

    from py_core.data.reader import _scan
    try:
        expected = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if r]
    except csv.Error:
        expected = None
    try:
        got = [fields for _, fields in _scan(text, ",", 1, False, "t.csv")]
    except DataError:
        got = None
    assert got == expected
