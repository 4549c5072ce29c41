"""A job kind is one description (py_core/jobs/kinds.py): every kind has every part, the forest's
parameters are spelled once, GET /api/kinds serves the registry, and a kind kept in its own
package (tests/kind_demo) runs through the server with one registry line."""

import asyncio
import inspect
import io
import json
import sqlite3
import time
import uuid
import zipfile
from array import array
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from py_core.forest import RandomForestClassifier, RandomForestRegressor
from py_core.forest.params import PARAMS as FOREST_PARAMS
from py_core.jobs import Context, run_job
from py_core.jobs.kinds import KINDS, PARTS, Kind, kind, load
from server.app import create_app
from server.runners import sklearn_runner
from server.runners.common import Runner

DEMO = "column_mean=tests.kind_demo.job:KIND"  # the demo kind's registry line


@pytest.mark.parametrize("name", list(KINDS))
def test_every_kind_has_every_part(name):
    k = kind(name)
    assert isinstance(k, Kind) and k.name == name and k.label
    assert set(PARTS) == {"name", "label", "run", "params", "main_timing", "needs", "cost", "plots",
                          "exports", "snippet", "runners", "tab", "panel"}
    if k.main_timing is not None:  # None: no main phase (a load, a suite)
        assert k.main_timing.key and k.main_timing.label and k.main_timing.words
    if k.run is not None:
        assert inspect.iscoroutinefunction(k.run)
        assert list(inspect.signature(k.run).parameters)[:4] == ["job", "backend", "ctx", "session"]
    for p in (k.params or ()):  # the page's form reads these
        assert p.label != p.name and p.help, f"{name}.{p.name} has no label or help"
        if p.default is not None:  # None: absent (a transformer's override: the preset's)
            p.check(p.default)     # else a default the table itself accepts
    if k.runners:  # a kind the server reruns: it costs it, checks its params and its fields
        assert k.run is not None and k.cost is not None and k.params is not None and k.needs
        assert k.main_timing is not None  # what `speedup` compares
        for path in k.runners:
            runner = load(path)
            assert isinstance(runner, Runner) and name in runner.kinds
    else:
        assert k.cost is None  # nothing queued, so nothing to cost
    assert not k.panel or k.tab  # a panel is shown as the kind's tab
    if k.snippet is not None:
        stem, ext, path = k.snippet
        assert stem and ext in k.exports and callable(load(path))
    json.dumps(k.describe())


def test_forest_parameters_are_spelled_once():
    """The estimators' signature, scikit-learn's defaults and the sklearn runner's names are the
    table's (py_core/forest/params.py)."""
    from sklearn.ensemble import RandomForestRegressor as SkForest
    for cls in (RandomForestRegressor, RandomForestClassifier):
        sig = inspect.signature(cls.__init__).parameters
        assert [n for n in sig if n not in ("self", "backend")] == list(FOREST_PARAMS.names())
        assert {n: sig[n].default for n in FOREST_PARAMS.names()} == FOREST_PARAMS.defaults()
        assert cls.PARAMS == (*FOREST_PARAMS.names(), "backend")
    sk = SkForest().get_params()
    for name in sklearn_runner.PARAMS:
        if name != "max_features":  # the table's "default": sklearn's per task (1.0 or sqrt)
            assert sk[name] == FOREST_PARAMS.params[name].default, name
    assert set(FOREST_PARAMS.names()) - set(sklearn_runner.PARAMS) == {
        "criterion", *sklearn_runner.NO_COUNTERPART}
    with pytest.raises(ValueError, match=r"n_bins: must be an integer in 2\.\.256, not 257"):
        RandomForestRegressor(n_bins=257)._spec(10, 2, 0)


def test_api_kinds_serves_the_registry(client):
    got = {k["name"]: k for k in client.get("/api/kinds").json()["kinds"]}
    assert list(got) == list(KINDS)
    assert {n: (k["main_timing"] or {}).get("key") for n, k in got.items()} == {
        "selftest": "kernels", "dataset_load": None, "random_forest": "fit",
        "gradient_boosting": "fit", "transformer": "step", "suite": None}
    forest = {p["name"]: p for p in got["random_forest"]["params"]}
    assert forest["n_bins"] == {"name": "n_bins", "default": 256, "label": "Bins per feature",
                                "help": "quantile bins of a feature of many values",
                                "types": [{"type": "integer", "min": 2, "max": 256}]}
    assert got["random_forest"]["runners"] == ["sklearn", "xgboost", "lightgbm", "cuml",
                                               "py_core-native", "py_core-reference"]
    assert got["transformer"]["runners"] == ["py_core-native", "torch"]
    assert got["selftest"]["runners"] == [] and got["selftest"]["tab"] == "gpu"
    assert {n: k["panel"] for n, k in got.items()} == {  # the page's kinds' tabs (web/app.js)
        "selftest": "", "dataset_load": "", "random_forest": "/web/panels/forest.js",
        "gradient_boosting": "/web/panels/boosting.js", "transformer": "/web/panels/transformer.js", "suite": ""}
    assert all(k["code"] is None for k in got.values())  # py_core's kinds are in the wheel
    root = Path(__file__).resolve().parents[1]  # served as /web/ by server/static.py
    for k in got.values():
        if k["panel"]:
            assert "\nexport { mount" in (root / k["panel"][1:]).read_text(), k["panel"]


def test_unknown_kind_is_refused_and_never_costed_free(client):
    run = {"id": str(uuid.uuid4()), "kind": "column_mean", "config": {"kind": "column_mean"}}
    r = client.post("/api/runs", json=run)
    assert r.status_code == 400 and r.json()["error"]["field"] == "kind"


def test_a_kind_in_its_own_package_runs_with_one_registry_line(settings, monkeypatch, reference_backend):
    """tests/kind_demo: its job, Kind and runner, and one line: validated and costed by POST
    /api/runs, compared by its runner in a worker process, listed by GET /api/kinds."""
    monkeypatch.setenv("PLAYGROUND_KINDS", DEMO)       # the comparison workers' registry
    monkeypatch.setitem(KINDS, *DEMO.split("="))       # this process's (kinds.register's line)
    settings.comparisons = "on"
    job = {"kind": "column_mean", "dataset": "iris", "column": "sepal length (cm)",
           "params": {"trim": 0.1}}
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        listed = {k["name"]: k for k in client.get("/api/kinds").json()["kinds"]}["column_mean"]
        assert listed["runners"] == ["scipy"] and listed["main_timing"]["key"] == "mean"
        assert listed["params"][0]["label"] == "Trim"
        bad = client.post("/api/runs", json={"id": str(uuid.uuid4()), "kind": "column_mean",
                                             "config": {**job, "params": {"trim": 0.5}}})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "config.params.trim"
        from server.datasets import dataset_path
        path = dataset_path(settings.data_dir, "iris")
        tab = asyncio.run(run_job(job, reference_backend, Context(load_dataset=lambda _: path.read_bytes())))
        run_id = str(uuid.uuid4())
        r = client.post("/api/runs", json={"id": run_id, "kind": "column_mean", "config": job,
                                           "backend": tab["backend"], "metrics": tab["metrics"],
                                           "timings": tab["timings"]})
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 120
        while True:
            body = client.get(f"/api/runs/{run_id}/comparisons").json()
            (row,) = body["comparisons"]
            if row["status"] in ("done", "failed", "unavailable") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        summary = client.get("/api/runs", params={"kind": "column_mean"}).json()["runs"][0]
    assert row["runner"] == "scipy" and row["status"] == "done", row["error"]
    assert row["metrics"]["n"] == tab["metrics"]["n"] == 150
    # the tab sums f32 values (its column_sum kernel); SciPy f64 ones
    assert row["metrics"]["mean"] == pytest.approx(tab["metrics"]["mean"], rel=1e-6)
    assert row["speedup"] == pytest.approx(tab["timings"]["mean"] / row["timings"]["mean"])
    assert summary["main_time"] == pytest.approx(tab["timings"]["mean"])  # its main timing
    with sqlite3.connect(settings.db_path) as conn:  # costed by its own cost: the iris rows
        assert conn.execute("SELECT cost FROM comparisons WHERE run_id = ?",
                            (run_id,)).fetchone()[0] == 150


@pytest.mark.parametrize("n", [1, 255, 256, 70_000])
def test_a_kinds_own_kernel_family_runs_on_the_gpu_against_its_reference(n, native_backend, reference_backend, rng):
    """tests/kind_demo/column_sum: a family kept in the kind's package (its WGSL beside its
    description and reference, including common.wgsl's wg_reduce) compiles and runs on lavapipe,
    and agrees with its reference and with math.fsum."""
    import math

    from py_core.kernels import family as fam
    from tests.kind_demo import column_sum

    assert fam.package("column_sum") == "tests.kind_demo.column_sum"
    assert fam.wgsl_file("column_sum").parent.name == "column_sum"
    src = fam.shader_source("column_sum")
    assert src.startswith("// Generated from tests/kind_demo/column_sum/__init__.py")
    assert "struct Params { n: u32 }" in src and "fn wg_sum(" in src and "#include" not in src
    values = [rng.uniform(-100.0, 100.0) for _ in range(n)]
    exact = math.fsum(array("f", values))
    alive = native_backend.memory()["buffers"]
    got = asyncio.run(column_sum.total(native_backend, values))
    want = asyncio.run(column_sum.total(reference_backend, values))
    assert got == pytest.approx(want, rel=1e-5, abs=1e-3) and want == pytest.approx(exact, abs=1e-3)
    assert native_backend.memory()["buffers"] == alive  # its scope freed what it made


def test_the_server_hands_a_kinds_package_and_panel_to_the_tab(settings, monkeypatch):
    """What the tab's worker and page load for a kind declared outside py_core (GET /api/kinds'
    `code` and `panel`): its package as a zip, its panel module; nothing else of the server's
    files, and nothing for a kind inside py_core or none."""
    monkeypatch.setitem(KINDS, *DEMO.split("="))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        listed = {k["name"]: k for k in client.get("/api/kinds").json()["kinds"]}["column_mean"]
        assert listed["tab"] == "column_mean" and listed["panel"] == "/kinds/column_mean/panel.js"
        assert listed["code"] == {"zip": "/kinds/column_mean/package.zip", "path": DEMO.split("=")[1]}
        z = client.get(listed["code"]["zip"])
        assert z.status_code == 200 and z.headers["content-type"] == "application/zip"
        names = set(zipfile.ZipFile(io.BytesIO(z.content)).namelist())
        assert {"tests/kind_demo/job.py", "tests/kind_demo/panel.js", "tests/kind_demo/column_sum/__init__.py",
                "tests/kind_demo/column_sum/column_sum.wgsl"} <= names
        assert all(n.startswith("tests/kind_demo/") and "__pycache__" not in n for n in names)
        panel = client.get(listed["panel"])
        assert panel.status_code == 200 and panel.headers["content-type"].startswith("text/javascript")
        assert "export function mount(" in panel.text
        for path in ("/kinds/column_mean/job.py", "/kinds/column_mean/..%2F..%2Fserver%2Fapp.py",
                     "/kinds/column_mean/../test_kinds.py", "/kinds/random_forest/package.zip",
                     "/kinds/random_forest/forest.js", "/kinds/nope/package.zip"):
            assert client.get(path).status_code == 404, path


@pytest.mark.parametrize("name", [n for n in KINDS if kind(n).params is not None])
def test_a_kinds_defaults_sent_back_are_accepted(name):
    """A client that sends every parameter at the default GET /api/kinds shows (the transformer's
    overrides: null, "the preset's") gets the run the defaults make, not a 400."""
    table = kind(name).params
    defaults = json.loads(json.dumps(table.defaults()))
    assert table.check(defaults) == defaults
    if name == "transformer":
        from py_core.transformer.config import TransformerConfig, parse_job_params
        assert parse_job_params(defaults)[0] == TransformerConfig.preset("tiny")
