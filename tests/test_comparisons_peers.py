"""The xgboost and lightgbm runners (forest mode) on real data, on the CPU: the page's rows and
metrics, the job's parameters mapped as the runner documents, and models as good as
scikit-learn's random forest on the same split."""

import pytest

from server.builtins import export_builtins
from server.runners import RUNNERS, execute, peers

pytest.importorskip("xgboost")
pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("data")
    export_builtins(path)
    return path


def job(dataset, **params):
    return {"kind": "random_forest", "dataset": dataset, "target": "target",
            "params": {"n_estimators": 60, "random_state": 0, **params},
            "split": {"test_size": 0.25, "seed": 7}}


@pytest.fixture(scope="module")
def results(data_dir):
    out = {}
    for name, j in (("diabetes", job("diabetes", max_depth=8)), ("iris", job("iris", max_depth=6)),
                    ("wine", job("wine", max_depth=6)), ("digits", job("digits", n_bins=64, max_depth=6))):
        for runner in ("sklearn", "xgboost", "lightgbm"):
            got = execute(runner, j, str(data_dir), "cpu")
            assert got["status"] == "done", (runner, name, got)
            out[name, runner] = got["result"]
    return out


@pytest.mark.parametrize("runner", ["xgboost", "lightgbm"])
def test_regression_as_good_as_sklearn(results, runner):
    ours, ref = results["diabetes", runner]["metrics"], results["diabetes", "sklearn"]["metrics"]
    assert set(ours) == {"mse", "mae", "r2"}
    # Binned splits and subsampling without replacement: not the same forest, as good within 10%.
    assert ours["mse"] == pytest.approx(ref["mse"], rel=0.10)
    assert ours["r2"] > 0.35


@pytest.mark.parametrize("runner", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("dataset,slack", [("iris", 0.06), ("wine", 0.06), ("digits", 0.03)])
def test_classification_as_good_as_sklearn(results, runner, dataset, slack):
    ours, ref = results[dataset, runner]["metrics"], results[dataset, "sklearn"]["metrics"]
    assert set(ours) == {"accuracy", "f1", "log_loss"}
    assert ours["accuracy"] >= ref["accuracy"] - slack
    assert ours["f1"] >= ref["f1"] - slack - 0.01


@pytest.mark.parametrize("runner", ["xgboost", "lightgbm"])
def test_rows_device_versions_notes(results, runner, data_dir):
    r = results["wine", runner]
    assert r["runner"] == runner and r["device"] == "cpu"
    assert r["rows"] == results["wine", "sklearn"]["rows"]
    package = "lightgbm" if runner == "lightgbm" else "xgboost"
    assert r["versions"][package] or r["versions"].get("xgboost-cpu")
    assert set(r["timings"]) == {"fit", "predict", "total"} and r["timings"]["fit"] > 0
    assert "without replacement" in r["note"] and r["note"] == "; ".join(r["notes"])
    assert r["ignored"] == []


def test_xgboost_mapping():
    kw, ignored, notes = peers.xgboost_kwargs(
        {"n_estimators": 50, "max_features": "sqrt", "max_depth": None, "n_bins": 64,
         "random_state": 3, "min_samples_leaf": 2, "min_samples_split": 5}, "regression", 16, 1000,
        "cpu")
    assert kw["n_estimators"] == 50 and kw["learning_rate"] == 1.0 and kw["reg_lambda"] == 0.0
    assert kw["subsample"] == 0.632 and kw["colsample_bynode"] == 4 / 16 and kw["max_bin"] == 64
    assert (kw["max_depth"], kw["grow_policy"], kw["max_leaves"]) == (0, "depthwise", 0)
    assert kw["min_child_weight"] == 2.0 and kw["random_state"] == 3 and kw["device"] == "cpu"
    assert ignored == ["min_samples_split"]
    assert any("without replacement" in n for n in notes)
    assert any("deprecated" in n for n in notes)
    kw, _, _ = peers.xgboost_kwargs({"bootstrap": False, "max_depth": 7}, "classification", 9, 100,
                                    "cuda")
    assert kw["subsample"] == 1.0 and kw["max_depth"] == 7 and kw["device"] == "cuda"
    assert kw["colsample_bynode"] == 3 / 9  # classification's default max_features: sqrt


def test_lightgbm_mapping():
    kw, ignored, notes = peers.lightgbm_kwargs(
        {"n_estimators": 30, "max_features": 0.5, "max_depth": 5, "n_bins": 32, "oob_score": True},
        "regression", 10, 500)
    assert kw["boosting_type"] == "rf" and kw["subsample"] == 0.632 and kw["subsample_freq"] == 1
    assert kw["feature_fraction_bynode"] == 0.5 and kw["max_bin"] == 32
    assert (kw["max_depth"], kw["num_leaves"]) == (5, 32) and kw["min_child_samples"] == 1
    assert ignored == ["oob_score"]
    kw, _, notes = peers.lightgbm_kwargs({"min_samples_leaf": 4}, "regression", 10, 10_000_000)
    assert (kw["max_depth"], kw["num_leaves"]) == (-1, peers.MAX_LEAVES_LGBM)
    assert kw["min_child_samples"] == 4


def test_features_per_split_as_sklearn():
    assert peers.features_per_split("sqrt", 20) == 4
    assert peers.features_per_split("log2", 64) == 6
    assert peers.features_per_split(0.33, 20) == 6
    assert peers.features_per_split(None, 7) == 7
    assert peers.features_per_split(3, 7) == 3
    with pytest.raises(ValueError, match="max_features"):
        peers.features_per_split("half", 7)


def test_xgboost_without_a_cuda_build_runs_on_the_cpu_and_says_so(data_dir, monkeypatch):
    monkeypatch.setattr(peers, "xgboost_cuda", lambda: False)
    got = execute("xgboost", job("iris", n_estimators=5), str(data_dir), "cuda")
    assert got["status"] == "done", got
    assert got["result"]["device"] == "cpu"
    assert "CPU-only build" in got["result"]["note"]


def test_registered():
    assert {"xgboost", "lightgbm"} <= set(RUNNERS)
    assert "random_forest" in RUNNERS["xgboost"].kinds and "transformer" not in RUNNERS["lightgbm"].kinds
