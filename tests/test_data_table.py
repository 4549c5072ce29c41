"""py_core.data.table and .features: type inference, missing values, summaries, model inputs."""

import json
import math
import random
from array import array

import pytest

from py_core.data import (
    MISSING_CATEGORY,
    Column,
    DataError,
    MedianImputer,
    Table,
    features_and_target,
    parse_csv,
    prepare,
    take_rows,
)
from py_core.data.reader import _CHUNK_CELLS


def csv_of(columns: dict[str, list]) -> bytes:
    names = list(columns)
    rows = zip(*columns.values())
    return ("\n".join([",".join(names)] + [",".join(map(str, r)) for r in rows]) + "\n").encode()


# --- type inference ---

def test_kinds_inferred():
    n = 100
    t = parse_csv(csv_of({
        "num": [i * 0.5 for i in range(n)],
        "ints": [i % 3 for i in range(n)],
        "exp": ["1e3", " 2.5 ", "-.5", "+7"] * 25,
        "cat": ["red", "green", "blue"] * 33 + ["red"],
        "text": [f"id{i}" for i in range(n)],
        "inf": ["1", "inf"] * 50,
        "under": ["1_000", "2"] * 50,
    }))
    kinds = {c.name: c.kind for c in t.columns}
    assert kinds == {"num": "numeric", "ints": "numeric", "exp": "numeric", "cat": "categorical",
                     "text": "text", "inf": "categorical", "under": "categorical"}
    assert list(t.column("exp").values[:4]) == [1000.0, 2.5, -0.5, 7.0]
    assert t.column("cat").categories == ["blue", "green", "red"]
    assert t.column("cat").codes()[:3] == array("d", [2.0, 1.0, 0.0])


def test_categorical_threshold_is_max_of_20_and_5_percent():
    def kind(n_rows, n_distinct):
        return parse_csv(csv_of({"v": [f"k{i % n_distinct}" for i in range(n_rows)]})).columns[0].kind
    assert kind(100, 20) == "categorical" and kind(100, 21) == "text"
    assert kind(1000, 50) == "categorical" and kind(1000, 51) == "text"


def test_tasks_inferred():
    t = parse_csv(csv_of({
        "label": ["a", "b"] * 30, "small_int": [i % 5 for i in range(60)],
        "many_int": list(range(60)), "real": [i / 7 for i in range(60)],
        "half": [0.5, 1.5] * 30,
    }))
    assert {c.name: c.task for c in t.columns} == {
        "label": "classification", "small_int": "classification", "many_int": "regression",
        "real": "regression", "half": "regression"}


# --- missing values ---

def test_missing_tokens():
    tokens = ["", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", " NA "]
    t = parse_csv(csv_of({"x": tokens + ["1", "2"], "c": tokens + ["u", "v"]}))
    x, c = t.columns
    assert x.kind == "numeric" and x.n_missing == len(tokens)
    assert all(math.isnan(v) for v in x.values[:len(tokens)]) and list(x.values[-2:]) == [1, 2]
    assert c.kind == "categorical" and c.n_missing == len(tokens)
    assert c.values[:len(tokens)] == [None] * len(tokens) and c.categories == ["u", "v"]


def test_all_missing_column_is_text():
    t = parse_csv(b"a,b\n1,\n2,NA\n")
    assert t.column("b").kind == "text" and t.column("b").n_missing == 2


def test_late_non_numeric_value_rereads_strings():
    # A column numeric for more than a chunk, then '?': its strings come back exactly as written.
    n = _CHUNK_CELLS // 2 + 10  # more rows than the first chunk holds (2 columns)
    vals = ["007", "1.50", "2e1"] * (n // 3) + ["?"]
    t = parse_csv(csv_of({"code": vals, "y": range(len(vals))}))
    col = t.column("code")
    assert col.kind == "categorical" and col.values == vals
    assert col.categories == ["007", "1.50", "2e1", "?"]
    assert t.column("y").kind == "numeric" and t.n_rows == len(vals)


def test_missing_policy_in_model_inputs():
    t = parse_csv(b"a,c,y\n1,x,1.5\nNA,,2.5\n3,y,NA\n5,x,4.0\n100,y,5\n")
    X, y, info = features_and_target(t, "y")
    assert info["task"] == "regression" and info["n_dropped"] == 1 and list(y) == [1.5, 2.5, 4, 5]
    assert info["categories"] == {"c": ["x", "y", MISSING_CATEGORY]}
    rows = [list(X[i * 2:i * 2 + 2]) for i in range(4)]
    assert rows[0] == [1, 0] and math.isnan(rows[1][0]) and rows[1][1] == 2  # missing code
    # Medians come from the training rows only, and are applied to the test rows.
    imputer = MedianImputer().fit(X, 2, rows=[0, 2, 3])
    assert imputer.medians_ == [5.0, 0.0]
    assert list(imputer.transform(take_rows(X, 2, [1]), 2)) == [5.0, 2.0]
    assert MedianImputer().fit(X, 2, rows=[1]).medians_ == [0.0, 2.0]  # no value: 0.0


# --- describe ---

def test_describe_is_json_ready():
    t = parse_csv(b"x,c,t\n1,a,q\n3,a,NA\nNA,b,s\n")
    d = json.loads(json.dumps(t.describe(preview_rows=2), allow_nan=False))
    assert (d["name"], d["rows"], d["delimiter"]) == ("data.csv", 3, ",")
    x, c, _ = d["columns"]
    assert x == {"name": "x", "type": "numeric", "missing": 1, "task": "classification",
                 "stats": {"min": 1, "max": 3, "mean": 2, "std": pytest.approx(math.sqrt(2))}}
    assert c["stats"] == {"distinct": 2, "top": "a", "freq": 2} and c["type"] == "categorical"
    assert d["preview"] == [[1, "a", "q"], [3, "a", None]]


# --- features_and_target ---

def test_classification_target_encoding():
    t = parse_csv(b"f,species\n1,setosa\n2,virginica\n3,setosa\n4,NA\n5,versicolor\n")
    X, y, info = features_and_target(t, "species")
    assert info["classes"] == ["setosa", "versicolor", "virginica"]
    assert list(y) == [0, 2, 0, 1] and y.typecode == "i" and list(X) == [1, 2, 3, 5]
    t = parse_csv(b"f,y\n1,3\n2,1\n3,3\n")
    assert features_and_target(t, "y")[2]["classes"] == [1, 3]
    X, y, info = features_and_target(t, "y", task="regression")
    assert info["classes"] is None and y.typecode == "d"


def test_features_and_target_refusals():
    t = parse_csv(csv_of({"a": range(0, 60, 2), "txt": [f"w{i}" for i in range(30)],
                          "lab": ["p", "q"] * 15}))  # a: not 0..n-1, so not the row index
    with pytest.raises(DataError, match="free text"):
        features_and_target(t, "a", features=["txt"])
    with pytest.raises(DataError, match="regression needs a numeric target"):
        features_and_target(t, "lab", task="regression")
    with pytest.raises(DataError, match="no column named 'nope'"):
        features_and_target(t, "nope")
    with pytest.raises(DataError, match="cannot also be a feature"):
        features_and_target(t, "a", features=["a"])
    with pytest.raises(DataError, match="at least two"):
        features_and_target(parse_csv(b"x,y\n1,k\n2,k\n"), "y")
    assert features_and_target(t, "a")[2]["features"] == ["lab"]  # text left out by default


def test_prepare_splits_and_imputes():
    rng = random.Random(1)
    rows = {"x": [rng.choice(["NA", str(rng.random())]) for _ in range(200)],
            "y": [i % 3 for i in range(200)]}
    p = prepare(parse_csv(csv_of(rows)), "y", seed=7)
    assert len(p.y_train) + len(p.y_test) == 200 and len(p.y_test) == 40
    assert not any(math.isnan(v) for v in p.X_train) and not any(math.isnan(v) for v in p.X_test)
    assert sorted(p.y_test).count(0) in (13, 14)  # stratified
    again = prepare(parse_csv(csv_of(rows)), "y", seed=7)
    assert (again.X_train, again.test_idx) == (p.X_train, p.test_idx)


def test_table_rejects_unequal_columns():
    with pytest.raises(ValueError, match="differ in length"):
        Table("t", [Column.numeric("a", [1.0]), Column.numeric("b", [1.0, 2.0])])


# --- speed: the bulk path is what makes a 100 MB file take seconds, not minutes ---

@pytest.mark.slow
def test_numeric_parse_speed():
    rng = random.Random(0)
    line = lambda: ",".join(f"{rng.random() * 1000:.1f}" for _ in range(20))
    data = ("\n".join([",".join(f"c{j}" for j in range(20))] + [line() for _ in range(100_000)])
            + "\n").encode()  # about 12 MB
    t = parse_csv(data)
    assert t.n_rows == 100_000 and all(c.kind == "numeric" for c in t.columns)
    # no clock here (2 shared cores): the file takes the numeric fast path, which is what
    # `make bench SUITE=data` times
    from py_core.data import table as table_module
    from py_core.data.reader import CsvSource
    fast = table_module._fast_numeric(CsvSource(data), 20)
    assert fast is not None and [c.values for c in t.columns] == fast


def test_parsing_looks_at_stop_all_along():
    from py_core.errors import Stopped
    rng = random.Random()
    rows = [",".join(f"{rng.random():.6f}" for _ in range(4)) for _ in range(150_000)]
    plain = ("a,b,c,d\n" + "\n".join(rows) + "\n").encode()  # about 5 MB: the numeric fast path
    quoted = plain.replace(b"a,b", b'"a",b', 1)  # a quote: the general path
    for data in (plain, quoted):
        asked = []
        table = parse_csv(data, should_stop=lambda: asked.append(1) and False)
        assert table.n_rows == 150_000 and len(asked) >= 5  # about every megabyte, each column
        with pytest.raises(Stopped):
            parse_csv(data, should_stop=lambda: True)


def test_a_categorical_feature_is_held_at_its_most_frequent_category():
    """Seattle's weather (vega_datasets' file): the weather's "median", where the surface holds
    it and the snippets' example row has it, is its most frequent category in the training rows
    (pandas' mode), not the category at the median code."""
    pd = pytest.importorskip("pandas")
    vega = pytest.importorskip("vega_datasets")
    from pathlib import Path
    path = Path(vega.__file__).parent / "_data" / "seattle-weather.csv"
    p = prepare(parse_csv(path.read_bytes()), "temp_max", features=["precipitation", "wind", "weather"])
    j = p.info["features"].index("weather")
    held = p.info["categories"]["weather"][int(p.medians[j])]
    assert held == pd.read_csv(path)["weather"].iloc[list(p.train_idx)].mode()[0]
    assert p.medians[p.info["features"].index("wind")] == pd.read_csv(path)["wind"].iloc[list(p.train_idx)].median()
