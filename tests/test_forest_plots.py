"""The decision surface tells the truth about the slice it shows: its values are the forest's own
predictions on the grid (regression as values on a colour scale, not binned), it names what it
holds and its legend, and it says so when the features not shown decide (on scikit-learn's wine
and diabetes)."""
from __future__ import annotations

import asyncio
import io
from array import array

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_wine

from py_core.forest import RandomForestClassifier, RandomForestRegressor
from py_core.jobs import Context, forest_job, forest_plots

PARAMS = {"n_estimators": 10, "max_depth": 6, "random_state": 0}


def csv_bytes(bunch, target, labels=None) -> bytes:
    out = io.StringIO()
    out.write(",".join([*bunch.feature_names, target]) + "\n")
    for row, t in zip(bunch.data, bunch.target):
        out.write(",".join(f"{v:.6g}" for v in row) + f",{labels[t] if labels is not None else t}\n")
    return out.getvalue().encode()


@pytest.fixture(scope="module")
def datasets():
    wine = load_wine()
    return {"wine": csv_bytes(wine, "cultivar", wine.target_names), "diabetes": csv_bytes(load_diabetes(), "progression")}


def surface(datasets, backend, dataset, target, pair=None):
    job = {"kind": "random_forest", "dataset": dataset, "target": target, "params": PARAMS,
           **({"surface": pair} if pair else {})}
    result = asyncio.run(forest_job.run(job, backend, Context(load_dataset=datasets.__getitem__)))
    return result, result["plots"]["surface"]


def grid_rows(result, s) -> array:
    """The surface's grid rebuilt from what it states: the held features at the model's medians,
    the two shown over their spans, cell centres, row-major from the bottom."""
    data = result["model"]["data"]
    n = s["grid"]["n"]
    fx, fy = data["features"].index(s["x_name"]), data["features"].index(s["y_name"])
    (x0, x1), (y0, y1) = s["grid"]["x"], s["grid"]["y"]
    X = array("d")
    for r in range(n):
        for c in range(n):
            row = list(data["medians"])
            row[fx], row[fy] = x0 + (c + 0.5) * (x1 - x0) / n, y0 + (r + 0.5) * (y1 - y0) / n
            X.extend(row)
    return X


def test_regression_surface_is_the_forests_predictions_on_a_colour_scale(datasets, reference_backend):
    result, s = surface(datasets, reference_backend, "diabetes", "progression")
    forest = RandomForestRegressor.from_bytes(result["model"]["binary"], backend="reference")
    want = asyncio.run(forest.predict(grid_rows(result, s), n_features=10))
    assert s["grid"]["values"] == pytest.approx(list(want), rel=1e-6)  # values, not 8 binned levels
    assert len(set(s["grid"]["values"])) > 50
    y = load_diabetes().target
    assert s["scale"] == [y.min(), y.max()] and "classes" not in s
    assert [p[2] for p in s["points"]] == [a for a, _ in result["plots"]["pred_vs_actual"]]  # actual targets
    # The slice in words: the eight others held at their training medians, named.
    assert s["others"] == 8 and [h[0] for h in s["held"]] == [
        f for f in load_diabetes().feature_names if f not in (s["x_name"], s["y_name"])][:forest_plots.HELD_SHOWN]
    assert [h[1] for h in s["held"]] == [result["model"]["data"]["medians"][result["model"]["data"]["features"].index(h[0])]
                                          for h in s["held"]]
    assert s["note"] is None  # bmi and s5 move the prediction across most of the target's range
    # Over sex and s1, the eight held decide: the slice's predictions span 11 of the targets' 268.
    _, flat = surface(datasets, reference_backend, "diabetes", "progression", ["sex", "s1"])
    assert max(flat["grid"]["values"]) - min(flat["grid"]["values"]) < 0.1 * (flat["scale"][1] - flat["scale"][0])
    assert "the 8 features not shown decide the prediction" in flat["note"]


def test_a_one_class_slice_over_wine_says_the_features_not_shown_decide(datasets, reference_backend):
    result, s = surface(datasets, reference_backend, "wine", "cultivar", ["ash", "magnesium"])
    assert s["classes"] == ["class_0", "class_1", "class_2"]  # the legend: class names by id
    assert len(set(s["grid"]["values"])) == 1 and len({p[2] for p in s["points"]}) == 3
    assert s["note"].startswith(f"The whole slice predicts {s['classes'][s['grid']['values'][0]]}, under test rows of 3 classes")
    assert "the 11 features not shown decide the prediction" in s["note"]
    forest = RandomForestClassifier.from_bytes(result["model"]["binary"], backend="reference")
    want = asyncio.run(forest.predict(grid_rows(result, s), n_features=13))
    assert [s["classes"][v] for v in s["grid"]["values"]] == list(want)
    # Over proline and flavanoids the slice shows all three cultivars: no note.
    _, s = surface(datasets, reference_backend, "wine", "cultivar", ["proline", "flavanoids"])
    assert set(s["grid"]["values"]) == {0, 1, 2} and s["note"] is None
    assert s["others"] == 11 and len(s["held"]) == forest_plots.HELD_SHOWN
    assert s["held"][0] == ["alcohol", pytest.approx(float(np.median(load_wine().data[:, 0])), rel=0.05)]
