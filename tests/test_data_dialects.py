"""The CSV dialects people produce: R's write.csv, Excel's legacy encodings and decimal commas,
missing markers, booleans, dates, row indexes; and the numeric fast path's equality with the
general path."""

import codecs
import json
import random
from array import array

import pytest

from py_core.data import DataError, parse_csv, prepare
from py_core.data import table as table_module
from py_core.data.features import features_and_target
from py_core.data.reader import CsvSource

R_CSV = b'''"","mpg","cyl","am","sold","when"
"Mazda RX4",21,6,TRUE,2020-01-03,"a"
"Mazda RX4 Wag",21,6,TRUE,2020-02-29,"b"
"Datsun 710",22.8,NA,FALSE,NA,"a"
"Hornet 4 Drive",21.4,6,FALSE,2021-12-31,"b"
'''


def test_r_write_csv_row_names_are_the_index():
    t = parse_csv(R_CSV, name="cars.csv")
    assert t.names[0] == "Unnamed: 0" and t.index == "Unnamed: 0"
    assert [c.kind for c in t.columns] == ["categorical", "numeric", "numeric", "boolean",
                                          "date", "categorical"]
    assert t.column("cyl").n_missing == 1 and t.column("sold").n_missing == 1
    assert t.column("am").values == ["TRUE", "TRUE", "FALSE", "FALSE"]
    desc = t.describe()
    assert desc["index"] == "Unnamed: 0" and desc["encoding"] == "UTF-8"
    assert desc["columns"][0]["index"] is True and "index" not in desc["columns"][1]
    assert desc["preview"][0] == ["Mazda RX4", 21, 6, "TRUE", "2020-01-03", "a"]
    # default features: not the index, not the date; booleans coded like categories
    X, _, info = features_and_target(t, "mpg")
    assert info["features"] == ["cyl", "am", "when"]
    assert info["kinds"] == ["numeric", "categorical", "categorical"]
    assert list(X[1::3]) == [1.0, 1.0, 0.0, 0.0]  # FALSE 0, TRUE 1


def test_dates_expand_to_parts_on_request():
    t = parse_csv(R_CSV)
    X, _, info = features_and_target(t, "mpg", features=["sold", "cyl"])
    assert info["features"] == ["sold.year", "sold.month", "sold.day", "sold.weekday", "cyl"]
    assert list(X[:5]) == [2020, 1, 3, 4, 6]  # 2020-01-03 was a Friday
    assert list(X[5:10]) == [2020, 2, 29, 5, 6]
    assert all(v != v for v in X[10:14])  # a missing date: NaN parts, imputed later
    assert prepare(t, "mpg", features=["sold"]).n_features == 4


@pytest.mark.parametrize("values, kind", [
    (["2020-01-01", "1999-12-31"], "date"),
    (["2020/01/01", "1999/12/31"], "date"),
    (["2020-01-01 10:00", "2020-01-01T23:59:59.5Z", "2020-01-02 00:00:00+01:00"], "datetime"),
    (["2020-02-30", "2020-01-01"], "categorical"),  # no such day
    (["2020-01-01 24:00", "2020-01-01 10:00"], "categorical"),
    (["01/02/2020", "03/04/2020"], "categorical"),  # day or month first: ambiguous, not a date
])
def test_date_kinds(values, kind):
    data = ("d,x\n" + "".join(f"{v},{i}\n" for i, v in enumerate(values * 3))).encode()
    assert parse_csv(data).column("d").kind == kind


def test_numbered_first_column_is_the_index():
    for start in (0, 1):
        rows = "".join(f"{i + start},{i * 0.5},{i % 2}\n" for i in range(50))
        t = parse_csv(f"id,x,y\n{rows}".encode())
        assert t.index == "id" and t.column("id").kind == "numeric"
        assert features_and_target(t, "y")[2]["features"] == ["x"]
    rows = "".join(f"{i + 2},{i * 0.5},{i % 2}\n" for i in range(50))  # 2..51: data, not index
    assert parse_csv(f"id,x,y\n{rows}".encode()).index is None
    assert parse_csv(b"x,y\n1,2\n3,4\n").index is None


def test_empty_header_cells_named_like_pandas():
    t = parse_csv(b"a,,c, \n1,2,3,4\n5,6,7,8\n")
    assert t.names == ["a", "Unnamed: 1", "c", "Unnamed: 3"] and t.index is None
    with pytest.raises(DataError, match="duplicate column name 'Unnamed: 1'") as info:
        parse_csv(b"a,,Unnamed: 1\n1,2,3\n")
    assert (info.value.line, info.value.column) == (1, 3)


def test_missing_markers():
    markers = ["", "NA", "N/A", "n/a", "#N/A", "NaN", "nan", "null", "NULL", "None", ".", "-"]
    rows = "".join(f"{i},{m},{'ab'[i % 2]},{m}\n" for i, m in enumerate(markers))
    t = parse_csv(f"i,x,k,s\n1.5,2,a,a\n{rows}".encode())
    assert t.column("x").kind == "numeric" and t.column("x").n_missing == len(markers)
    assert t.column("s").kind == "categorical" and t.column("s").n_missing == len(markers)


def test_booleans():
    t = parse_csv(b"b,c,x\nTRUE,true,1\nFALSE,False,2\nNA,TRUE,3\n")
    assert t.column("b").kind == "boolean" and t.column("b").categories == ["FALSE", "TRUE"]
    assert t.column("c").values == ["TRUE", "FALSE", "TRUE"]
    assert t.column("b").n_missing == 1
    assert parse_csv(b"b,x\nTRUE,1\nyes,2\n").column("b").kind == "categorical"


@pytest.mark.parametrize("delimiter, cells, values, fmt", [
    (";", ["1,5", "-0,25", "3"], [1.5, -0.25, 3.0], {"decimal": ","}),
    ("\t", ["1.234,5", "2,0", "1.000.000"], [1234.5, 2.0, 1e6],
     {"decimal": ",", "thousands": "."}),
    (";", ["1,234", "2,5"], [1.234, 2.5], {"decimal": ","}),  # ';' file: the comma is decimal
    (",", ['"1,234.5"', '"12,000"', "7"], [1234.5, 12000.0, 7.0], {"thousands": ","}),
    (",", ['"1.234,5"', '"2,25"'], [1234.5, 2.25], {"decimal": ",", "thousands": "."}),
    (";", ["1,234.5", "2"], [1234.5, 2.0], {"thousands": ","}),
])
def test_decimal_commas_and_thousands(delimiter, cells, values, fmt):
    data = f"x{delimiter}k\n" + "".join(f"{c}{delimiter}{i}\n" for i, c in enumerate(cells))
    col = parse_csv(data.encode()).column("x")
    assert col.kind == "numeric" and list(col.values) == values and col.format == fmt
    assert parse_csv(data.encode()).describe()["columns"][0]["format"] == fmt


@pytest.mark.parametrize("cells", [
    ['"1,5"', '"2,25"'],  # comma file, comma only: decimal or thousands? not a number
    ['"1,23"', '"1,234.5"'],  # thousands groups of two
])
def test_ambiguous_separators_stay_strings(cells):
    data = "x,k\n" + "".join(f"{c},{i}\n" for i, c in enumerate(cells))
    assert parse_csv(data.encode()).column("x").kind != "numeric"


def test_encodings_detected_and_named():
    text = "name;price;note\nCafé;1,5;naïve “quote”\nMüller;2,25;€ 3\n"
    expected = None
    for enc, label in [("utf-8", "UTF-8"), ("utf-8-sig", "UTF-8 (BOM)"),
                       ("utf-16", "UTF-16 (BOM)"), ("utf-16-be", None), ("cp1252", "cp1252")]:
        data = text.encode(enc)
        if label is None:  # big-endian with its mark
            data, label = codecs.BOM_UTF16_BE + data, "UTF-16 (BOM)"
        t = parse_csv(data, name="x.csv")
        assert t.encoding == label and t.describe()["encoding"] == label
        got = (t.names, t.column("name").values, list(t.column("price").values),
               t.column("note").values)
        expected = expected or got
        assert got == expected
    assert expected[1] == ["Café", "Müller"] and expected[3][0] == "naïve “quote”"
    latin = parse_csv("a,b\nÉté,1\nZoë,2\n".encode("latin-1"))
    assert latin.encoding == "latin-1" and latin.column("a").values == ["Été", "Zoë"]


def test_broken_utf16_and_nul_in_utf16_refused():
    with pytest.raises(DataError, match="not UTF-16 at byte offset"):
        parse_csv(codecs.BOM_UTF16_LE + "a,b\n1,2\n".encode("utf-16-le") + b"\x00")
    with pytest.raises(DataError, match="NUL character") as info:
        parse_csv("a,b\n1,\x002\n".encode("utf-16"))
    assert info.value.line == 2


def test_errors_keep_line_and_column_in_other_encodings():
    with pytest.raises(DataError) as info:
        parse_csv("a;b\nÉ;1\nü;2;3\n".encode("cp1252"), name="x.csv")
    assert (info.value.line, info.value.column) == (3, 3) and "3 fields" in info.value.message
    with pytest.raises(DataError) as info:
        parse_csv('a,b\n1,"x\n'.encode("utf-16"))
    assert (info.value.line, info.value.column) == (2, 2) and "unterminated" in info.value.message


def test_predictions_keep_the_row_ids():
    import asyncio

    from py_core.forest import RandomForestRegressor
    from py_core.gpu import get_backend
    from py_core.jobs.forest_job import predict_csv

    rows = "".join(f'"r{i}",{i % 7},{(i * 3) % 5},{i % 7 + 0.5}\n' for i in range(60))
    data = f'"",a,b,y\n{rows}'.encode()
    t = parse_csv(data)
    X, y, info = features_and_target(t, "y")
    backend = get_backend("reference")
    forest = RandomForestRegressor(n_estimators=3, random_state=0, backend=backend)
    asyncio.run(forest.fit(X, y, n_features=2))
    model = {**forest.to_dict(), "data": {"task": "regression", "target": "y",
                                          "features": ["a", "b"], "kinds": info["kinds"],
                                          "categories": {}, "medians": [0.0, 0.0]}}
    out = asyncio.run(predict_csv(model, data, "p.csv", backend=backend))
    lines = out["csv"].splitlines()
    assert lines[0] == "Unnamed: 0,y" and lines[1].startswith("r0,") and len(lines) == 61


def _random_numeric_csv(rng, n_rows, n_cols, crlf=False, missing=False, blank=False):
    lines = [",".join(f"c{j}" for j in range(n_cols))]
    for i in range(n_rows):
        cells = []
        for j in range(n_cols):
            r = rng.random()
            if missing and r < 0.02:
                cells.append(rng.choice(["", "NA", " nan ", "-"]))
            elif r < 0.3:
                cells.append(repr(rng.uniform(-1e6, 1e6)))
            elif r < 0.6:
                cells.append(f"{rng.gauss(0, 1):.{rng.randint(0, 17)}g}")
            elif r < 0.8:
                cells.append(str(rng.randint(-10**20, 10**20)))
            else:
                cells.append(rng.choice(["-0", "1e-320", "+5", " 7 ", ".5", "5.", "1E5"]))
        lines.append(",".join(cells))
        if blank and rng.random() < 0.01:
            lines.append("")
    return (("\r\n" if crlf else "\n").join(lines) + "\n").encode()


@pytest.mark.parametrize("kw", [{}, {"crlf": True}, {"missing": True, "blank": True}])
def test_fast_path_same_bits_as_general_path(kw, monkeypatch):
    data = _random_numeric_csv(random.Random(5), 12_000, 6, **kw)
    assert len(data) > table_module._FAST_STEP // 4  # big enough for the fast path
    assert table_module._fast_numeric(CsvSource(data), 6) is not None  # it is taken
    fast = parse_csv(data)
    called = []
    monkeypatch.setattr(table_module, "_fast_numeric", lambda *a: called.append(1))
    general = parse_csv(data)
    assert called
    assert json.dumps(fast.describe()) == json.dumps(general.describe())
    for a, b in zip(fast.columns, general.columns):
        assert a.kind == b.kind == "numeric" and a.values.tobytes() == b.values.tobytes()


@pytest.mark.parametrize("bad, words", [
    (b"1,2,3\n", "row has 3 fields"),  # ragged: the fast path gives way, the error is the same
    (b'1,"2"\n', None),  # a quote: the general path reads it
    (b"1,x\n", None),  # a string: a categorical column
    (b"1,inf\n", None),
])
def test_fast_path_gives_way(bad, words):
    good = b"".join(b"%d,%d\n" % (i, i * 7 % 13) for i in range(60_000))
    data = b"a,b\n" + good + bad + good
    if words:
        with pytest.raises(DataError, match=words) as info:
            parse_csv(data)
        assert info.value.line == 60_002
    else:
        t = parse_csv(data)
        assert t.n_rows == 120_001 and t.column("a").kind == "numeric"
        assert array("d", t.column("a").values[:3]) == array("d", [0, 1, 2])


@pytest.mark.parametrize("data", [
    R_CSV,
    "a;b\r\nÉté;1,5\r\n".encode("cp1252"),
    b"a,b\n1,2\n3\n",  # an error, the same one
    b"\xef\xbb\xbfa,b\n" + b"".join(b"%d,%d\n" % (i, i * 3) for i in range(70_000)),  # fast path
])
def test_a_bytearray_is_read_in_place_like_bytes(data):
    """The tab streams a fetched file into a bytearray; parse_csv reads it without a copy."""
    def outcome(x):
        try:
            return json.dumps(parse_csv(x, name="f.csv").describe())
        except DataError as exc:
            return exc.to_dict()
    assert outcome(bytearray(data)) == outcome(data)
