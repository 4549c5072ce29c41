"""Hostile inputs, second round (issue 31): a job's params parsed once, for the caps and the
runners alike; row counts from the upload's own parse; a client's forest checked before an export
is sized by it; the job memory limit from the machine; upload summaries bounded per cell and
listed without parsing them; control characters in an upload's fields; formula cells in the
predictions CSV. One server (TestClient, comparisons off: no Dask cluster) for the module.

The data are vega_datasets' seattle-weather.csv (1,461 days), rewritten where a test needs a
hostile form of it (CR line ends, huge cells, formula row ids).
"""
from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import sqlite3
import uuid
from importlib.util import find_spec
from pathlib import Path

import pytest
from starlette.testclient import TestClient  # conftest imported it quietly already

from conftest import settings_in
from py_core.boosting.cost import NODE_WORK
from py_core.data import parse_csv
from py_core.data.features import features_and_target
from py_core.forest import RandomForestClassifier, RandomForestRegressor
from py_core.jobs import JobError
from py_core.jobs.forest_job import predict_csv
from server import jobcost
from server.app import create_app
from server.runners import peers, sklearn_runner
from server.settings import Settings

WEATHER = Path(find_spec("vega_datasets").origin).parent / "_data" / "seattle-weather.csv"
ROWS = 1461


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    settings = settings_in(tmp_path_factory.mktemp("inputs"), comparisons="off")
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def settings(client):
    return client.app.state.settings


def run_of(kind, params, **config):
    return {"id": str(uuid.uuid4()), "kind": kind, "backend": "webgpu",
            "config": {"kind": kind, "params": params, **config}}


def refused(r, status=400) -> dict:
    assert r.status_code == status, r.text
    return r.json()["error"]


def upload(client, data: bytes, filename="weather.csv", **fields):
    return client.post("/api/datasets", files={"file": (filename, data, "text/csv")}, data=fields)


# -- 1. one parse of a job's params ------------------------------------------------------------

def test_params_are_checked_at_post_by_the_kinds_table(client):
    forest = {"dataset": "diabetes", "target": "target"}
    for params, field, said in (
            ({"n_estimators": "1000000"}, "n_estimators", "an integer in 1..2147483647"),
            ({"n_estimators": True}, "n_estimators", "not True"),
            ({"n_estimators": 1e6}, "n_estimators", "an integer"),
            ({"max_depth": 0}, "max_depth", "null or an integer in 1.."),
            ({"min_samples_leaf": -1}, "min_samples_leaf", "a fraction in (0, 1)"),
            ({"random_state": 2**32}, "random_state", "0..4294967295"),
            ({"criterion": "mse"}, "criterion", "'gini'"),
            ({"trees": 3}, "trees", "unknown forest parameter")):
        error = refused(client.post("/api/runs", json=run_of("random_forest", params, **forest)))
        assert error["field"] == f"config.params.{field}" and said in error["message"], error
    text = {"text": "shakespeare"}
    error = refused(client.post("/api/runs", json=run_of("transformer", {"sample_chars": 10**9},
                                                         **text)))
    assert error["field"] == "config.params.sample_chars" and "0..100000" in error["message"]
    error = refused(client.post("/api/runs", json=run_of("transformer", {"n_embd": 100,
                                                                         "n_head": 3}, **text)))
    assert error["field"] == "config.params" and "multiple of n_head" in error["message"]
    error = refused(client.post("/api/runs", json={**run_of("nope", {}), "kind": "nope"}))
    assert error["field"] == "kind" and "random_forest" in error["message"]
    # What the page sends is stored as it was sent, and nothing refused was.
    good = run_of("random_forest", {"n_estimators": 20, "max_depth": None, "max_features": 0.5,
                                    "min_samples_split": 0.1, "bootstrap": False,
                                    "criterion": "gini", "random_state": 0}, **forest)
    assert client.post("/api/runs", json=good).json()["config"] == good["config"]
    assert [r["id"] for r in client.get("/api/runs").json()["runs"]] == [good["id"]]


def test_the_caps_and_the_runners_read_the_same_values():
    stored = {"kind": "random_forest", "dataset": "diabetes", "target": "target",
              "params": {"n_estimators": "1000000"}}  # a run stored before the table
    with pytest.raises(jobcost.Invalid) as caught:
        jobcost.estimate(stored, Path("."))
    assert caught.value.field == "config.params.n_estimators"
    for mapping in (lambda p: peers.xgboost_kwargs(p, "regression", 10, 1000, "cpu"),
                    lambda p: peers.lightgbm_kwargs(p, "regression", 10, 1000),
                    lambda p: sklearn_runner.estimator_kwargs(p, "regression")):
        with pytest.raises(JobError, match="n_estimators: must be an integer"):
            mapping(stored["params"])
    # A fraction of the rows is a fraction (int(0.01 or 1) was 0 leaves' rows: a division by 0).
    kw, _, _ = peers.lightgbm_kwargs({"min_samples_leaf": 0.01, "max_depth": 2**31 - 1},
                                     "regression", 10, 5000)
    assert kw["min_child_samples"] == 50 and kw["num_leaves"] == peers.MAX_LEAVES_LGBM
    kw, _ = sklearn_runner.estimator_kwargs({"max_features": "default"}, "classification")
    assert kw["max_features"] == "sqrt"  # py_core's default, which scikit-learn has no name for
    # A transformer is costed with what it samples too (one forward pass a character).
    gpt = {"kind": "transformer", "text": "shakespeare", "params": {"preset": "micro"}}
    quiet = jobcost.estimate(gpt, Path("."))
    loud = jobcost.estimate({**gpt, "params": {"preset": "micro", "sample_chars": 100_000}},
                            Path("."))
    # micro's block_size is 16; 200 characters are sampled by default
    assert loud["cost"] - quiet["cost"] == quiet["parameters"] * 16 * (100_000 - 200)
    # A kind the server cannot cost is refused, never free.
    with pytest.raises(jobcost.Invalid, match="cannot cost"):
        jobcost.estimate({"kind": "selftest"}, Path("."))


def test_the_forest_table_is_the_estimators_parameters():
    from py_core.jobs import ParamError, params_of
    table = params_of("random_forest")
    switches = {"profile", "parallel_bins"}
    assert set(table.params) - switches == set(RandomForestRegressor().get_params()) - {"backend"}
    defaults = RandomForestClassifier().get_params()
    assert all(table.params[k].default == defaults[k] for k in ("n_estimators", "max_depth",
                                                                "min_samples_split", "bootstrap",
                                                                "n_bins", "exact_bins"))
    with pytest.raises(ParamError, match="not nan"):
        table.check({"min_samples_split": float("nan")})


# -- 2. rows from the upload's own parse --------------------------------------------------------

def test_a_file_with_cr_line_ends_is_costed_by_its_rows(client, settings):
    data = WEATHER.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    r = upload(client, data)
    assert r.status_code == 201, r.text
    dataset = r.json()["id"]
    assert r.json()["rows"] == ROWS
    job = {"kind": "random_forest", "dataset": dataset, "target": "weather",
           "params": {"n_estimators": 100, "max_depth": 10}}
    est = jobcost.estimate(job, settings.data_dir)
    assert (est["rows"], est["columns"], est["cost"]) == (ROWS, 6, ROWS * 100 * 10)
    with pytest.raises(jobcost.OverCap, match="max_forest_cost"):
        jobcost.check(job, settings.data_dir, {"max_forest_cost": 1e6})


def test_a_boosted_classifier_is_costed_by_its_classes(client, settings):
    """A classifier of K > 2 classes grows K trees an iteration: the cost counts the classes the
    target can hold, from the upload's summary (it counted one tree an iteration, so a target of
    1,000 classes ran 1,000 times what was costed)."""
    r = upload(client, WEATHER.read_bytes())
    assert r.status_code == 201, r.text
    dataset = r.json()["id"]

    def job(target, task=None):
        return {"kind": "gradient_boosting", "dataset": dataset, "target": target, "task": task,
                "params": {"max_iter": 100, "max_leaf_nodes": 31}}
    weather = jobcost.estimate(job("weather"), settings.data_dir)  # drizzle, fog, rain, snow, sun
    assert (weather["classes"], weather["trees_per_iteration"]) == (5, 5)
    # columns but the target, 5 levels of 31 leaves, 61 nodes each searching 5 x 255 bins
    assert weather["cost"] == 100 * 5 * (ROWS * 5 * 5 + 61 * (5 * 255 + NODE_WORK))
    assert jobcost.estimate(job("temp_max"), settings.data_dir)["trees_per_iteration"] == 1
    # A numeric column the job makes classes: as many as it has rows, at most MAX_CLASSES.
    forced = jobcost.estimate(job("temp_max", "classification"), settings.data_dir)
    assert forced["classes"] == 1000 and forced["cost"] == weather["cost"] / 5 * 1000
    with pytest.raises(jobcost.OverCap, match="max_boosting_cost"):
        jobcost.check(job("temp_max", "classification"), settings.data_dir,
                      {"max_boosting_cost": weather["cost"] * 10})
    assert jobcost.estimate(job("no such column"), settings.data_dir)["classes"] == 1


# -- 3. a client's forest, checked before an export is sized by it -------------------------------

@pytest.fixture(scope="module")
def forest_dict():
    table = parse_csv(WEATHER.read_bytes())
    X, y, info = features_and_target(table, "weather", ["precipitation", "temp_max", "wind"])
    forest = RandomForestClassifier(n_estimators=2, max_depth=3, random_state=0)
    asyncio.run(forest.fit(X, [info["classes"][v] for v in y], n_features=3))
    return forest.to_dict()


@pytest.mark.parametrize("change, field, said", [
    (lambda m: m["trees"][0]["left"].__setitem__(0, 99), "trees[0].left[0]", "1.."),
    (lambda m: m["trees"][1]["left"].__setitem__(0, 0), "trees[1].left[0]", "1.."),  # a cycle
    (lambda m: m["trees"][0]["feature"].__setitem__(0, -5), "trees[0].feature[0]", "-1..2"),
    (lambda m: m["trees"][0]["feature"].__setitem__(0, 3), "trees[0].feature[0]", "-1..2"),
    (lambda m: m.__setitem__("n_outputs", 10**9), "n_outputs", "1..1000"),
    (lambda m: m.__setitem__("n_outputs", 1e9), "n_outputs", "an integer"),
])
def test_a_stored_model_is_checked_before_it_is_exported(client, forest_dict, change, field,
                                                         said):
    pytest.importorskip("onnx")
    model = json.loads(json.dumps(forest_dict))
    change(model)
    run = {**run_of("random_forest", {"random_state": 1}, dataset="diabetes", target="target"),
           "extra": {"model": model}}
    assert client.post("/api/runs", json=run).status_code == 201
    error = refused(client.get(f"/api/runs/{run['id']}/model.onnx"), 409)
    assert error["field"].startswith(f"extra.model.{field}") and said in error["message"], error
    assert client.get(f"/api/runs/{run['id']}").status_code == 200  # the run is kept


def test_a_forest_past_the_bounds_is_refused_before_its_nodes_are_read():
    from py_core.forest.export import FormatError, check
    nodes = [-1] * 40_000  # one list for every array: 40,000 leaves of 1,000 classes, 4e7 values
    tree = dict.fromkeys(("feature", "threshold", "left", "right", "value"), nodes)
    model = {"estimator": "RandomForestClassifier", "n_features": 3, "n_outputs": 1000,
             "classes": list(range(1000)), "trees": [tree]}
    with pytest.raises(FormatError, match="nodes x outputs") as caught:
        check(model)
    assert caught.value.field == "trees[0]"


# -- 4. the job memory limit, from the machine ----------------------------------------------------

def test_the_job_memory_limit_is_half_the_machines(monkeypatch):
    from server.settings import machine_memory_mb
    real = os.sysconf
    pages = 24 * 2**30 // real("SC_PAGE_SIZE")  # a 24 GB host, as the red team's
    monkeypatch.setattr(os, "sysconf", lambda name: pages if name == "SC_PHYS_PAGES" else real(name))
    assert machine_memory_mb() <= 24 * 1024
    assert Settings().job_memory_mb == int(machine_memory_mb() / 2) <= 12 * 1024


# -- 5. summaries bounded per cell, listed without parsing them ------------------------------------

def test_huge_cells_are_cut_in_the_stored_summary_and_listing_reads_no_summary(client, settings):
    lines = WEATHER.read_bytes().decode().splitlines()[:41]
    huge = [lines[0]] + [line.rsplit(",", 1)[0] + "," + line.rsplit(",", 1)[1] * 20_000
                         for line in lines[1:]]  # "sunsunsun...": 60,000 characters a cell
    r = upload(client, "\n".join(huge).encode(), filename="huge.csv")
    assert r.status_code == 201, r.text
    summary = client.get(f"/api/datasets/{r.json()['id']}").json()
    cells = [c for row in summary["preview"] for c in row if isinstance(c, str)]
    assert len(summary["preview"]) == 20 and max(map(len, cells)) == 257
    assert summary["preview"][0][-1] == ("drizzle" * 37)[:256] + "…"
    assert len(summary["columns"][-1]["stats"]["top"]) == 257
    assert len(json.dumps(summary)) < 20_000  # 2.4 MB whole
    # The listing comes from the row's columns: a summary it cannot parse does not stop it.
    with sqlite3.connect(settings.db_path) as conn:
        conn.execute("UPDATE datasets SET summary = 'not JSON' WHERE id = ?", (r.json()["id"],))
    listed = {d["id"]: d for d in client.get("/api/datasets").json()["datasets"]}
    assert {k: listed[r.json()["id"]][k] for k in ("name", "rows", "columns", "builtin")} == \
        {"name": "huge.csv", "rows": 40, "columns": 6, "builtin": False}


# -- 6. control characters in an upload's fields ----------------------------------------------

def _form(filename: str, delimiter: str | None, data: bytes) -> bytes:
    head = "--b0undary\r\n"
    parts = b""
    if delimiter is not None:
        parts += (f'{head}Content-Disposition: form-data; name="delimiter"\r\n\r\n'
                  f"{delimiter}\r\n").encode()
    parts += (f'{head}Content-Disposition: form-data; name="file"; filename="{filename}"\r\n'
              "Content-Type: text/csv\r\n\r\n").encode() + data + b"\r\n--b0undary--\r\n"
    return parts


@pytest.mark.parametrize("filename, delimiter, field", [
    ("weather.csv", "\x00", "delimiter"), ("weather.csv", "\x01", "delimiter"),
    ("weather.csv", "\x1b", "delimiter"), ("wea\x00ther.csv", None, "file"),
    ("wea\x1bther.csv", ",", "file"), ("wea\u2028ther.csv", None, "file")])
def test_control_characters_in_an_uploads_fields_are_a_400(client, filename, delimiter, field):
    before = client.get("/api/datasets").json()["datasets"]
    r = client.post("/api/datasets", content=_form(filename, delimiter, WEATHER.read_bytes()),
                    headers={"content-type": "multipart/form-data; boundary=b0undary"})
    assert refused(r)["field"] == field
    assert client.get("/api/datasets").json()["datasets"] == before


def test_a_tab_is_still_a_delimiter(client):
    tab = WEATHER.read_bytes().replace(b",", b"\t")
    r = client.post("/api/datasets", content=_form("weather.tsv", "\t", tab),
                    headers={"content-type": "multipart/form-data; boundary=b0undary"})
    assert r.status_code == 201 and r.json()["rows"] == ROWS and r.json()["delimiter"] == "\t"


# -- 7. formula cells in the predictions CSV ------------------------------------------------------

HOSTILE = ('=HYPERLINK("http://x","y{i}")', "@SUM(A{i})", "+cmd{i}", "-cmd{i}", "-{i}",
           "+{i}.5e-3", "row{i}")  # four formulas, two signed numbers, a plain id (a tab or a
                                   # CR at a cell's start: the parser trims them away)


def test_formula_cells_in_the_predictions_csv_are_neutralised(reference_backend):
    lines = WEATHER.read_bytes().decode().splitlines()[:81]
    ids = [HOSTILE[i % len(HOSTILE)].format(i=i) for i in range(80)]
    body = "".join('"{}",{}\n'.format(rid.replace('"', '""'), line.split(",", 1)[1])
                   for rid, line in zip(ids, lines[1:]))
    data = ('"",' + lines[0].split(",", 1)[1] + "\n" + body).encode()  # the ids: its index
    X, y, info = features_and_target(parse_csv(data), "temp_max", ["precipitation", "wind"])
    forest = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=0,
                                   backend=reference_backend)
    asyncio.run(forest.fit(X, y, n_features=2))
    model = {**forest.to_dict(), "data": {"task": "regression", "target": "temp_max",
                                          "features": ["precipitation", "wind"],
                                          "kinds": info["kinds"], "categories": {},
                                          "medians": [0.0, 0.0]}}
    out = asyncio.run(predict_csv(model, data, "p.csv", backend=reference_backend))
    got = [row[0] for row in csv.reader(io.StringIO(out["csv"]))][1:]
    assert got == [("'" if i % len(HOSTILE) < 4 else "") + rid for i, rid in enumerate(ids)]
