"""The comparison runners called directly (as a worker process calls them): the page's rows and
metrics, parameters mapped, and each runner that cannot run here saying why."""

import importlib.util

import pytest

from server.builtins import export_builtins
from server.runners import RUNNERS, common, cuml_runner, execute, runners_for


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("data")
    export_builtins(path)
    return path


def forest_job(dataset="wine", target="target", **params):
    return {"kind": "random_forest", "dataset": dataset, "target": target,
            "params": {"n_estimators": 20, "random_state": 0, **params},
            "split": {"test_size": 0.25, "seed": 7}}


def test_registry():
    assert list(RUNNERS) == ["sklearn", "xgboost", "lightgbm", "cuml", "py_core-native",
                             "py_core-reference", "torch"]
    assert [r.name for r in runners_for("transformer")] == ["py_core-native", "torch"]
    assert runners_for("selftest") == []


def test_sklearn_uses_the_pages_rows_and_params(data_dir):
    job = forest_job(criterion="entropy", max_features="sqrt", min_samples_leaf=2, n_bins=64)
    out = execute("sklearn", job, str(data_dir), "cpu")
    assert out["status"] == "done", out
    r = out["result"]
    prep = common.forest_data(job, data_dir)  # py_core.data's prepare, as the page calls it
    assert r["rows"] == {"train": len(prep.y_train), "test": len(prep.y_test)}
    assert r["params"] == {"n_estimators": 20, "random_state": 0, "criterion": "entropy",
                           "max_features": "sqrt", "min_samples_leaf": 2, "n_jobs": -1}
    assert r["ignored"] == ["n_bins"]
    # The same model fit here gives the same metrics: the runner adds nothing of its own.
    from sklearn.ensemble import RandomForestClassifier
    X_train, y_train, X_test, y_test = common.as_numpy(prep)
    model = RandomForestClassifier(n_estimators=20, random_state=0, criterion="entropy",
                                   max_features="sqrt", min_samples_leaf=2).fit(X_train, y_train)
    assert r["metrics"]["accuracy"] == pytest.approx(model.score(X_test, y_test))
    assert set(r["timings"]) == {"fit", "predict", "total"}


def test_sklearn_on_a_synthetic_set(data_dir):
    job = forest_job("synthetic:friedman1?n_samples=300&seed=3", target="y", max_depth=5)
    out = execute("sklearn", job, str(data_dir), "cpu")
    assert out["status"] == "done", out
    assert out["result"]["rows"] == {"train": 225, "test": 75}
    assert out["result"]["metrics"]["r2"] > 0.3


def test_bad_jobs_fail_with_the_reason(data_dir):
    out = execute("sklearn", forest_job(dataset="nope"), str(data_dir), "cpu")
    assert out["status"] == "failed" and "no data set 'nope'" in out["error"]
    out = execute("sklearn", forest_job(criterion="poisson"), str(data_dir), "cpu")
    assert out["status"] == "failed" and "criterion" in out["error"]


def test_cuml_says_why_it_cannot_run(data_dir, monkeypatch):
    assert "no CUDA device" in cuml_runner.check("cpu")
    monkeypatch.setattr(cuml_runner, "installed", lambda module: False)
    assert "cuML is not installed" in cuml_runner.check("cuda")
    out = execute("cuml", forest_job(), str(data_dir), "cpu")
    assert out == {"status": "unavailable", "error": cuml_runner.check("cpu")}


def test_reference_refuses_large_jobs(data_dir):
    job = forest_job("synthetic:regression?n_samples=1000000&n_features=20", target="y")
    out = execute("py_core-reference", job, str(data_dir), "cpu")
    assert out["status"] == "unavailable" and "too large" in out["error"]


def test_pycore_runner_without_a_job_module_says_so(data_dir, monkeypatch):
    from py_core.jobs.kinds import KINDS
    monkeypatch.delitem(KINDS, "random_forest")  # a py_core without the kind
    out = execute("py_core-reference", forest_job("iris", n_estimators=2), str(data_dir), "cpu")
    assert out["status"] == "unavailable" and "py_core has no 'random_forest' job" in out["error"]


@pytest.mark.skipif(importlib.util.find_spec("py_core.jobs.forest_job") is None,
                    reason="py_core's random_forest job (py_core/jobs/forest_job.py) is not there yet")
@pytest.mark.parametrize("runner", ["py_core-reference",
                                    pytest.param("py_core-native", marks=pytest.mark.native)])
def test_pycore_forest_runners(data_dir, runner):
    job = forest_job("iris", n_estimators=3, max_depth=4)
    out = execute(runner, job, str(data_dir), "cpu")
    assert out["status"] == "done", out
    r = out["result"]
    assert r["device"] == "cpu" and {"fit", "total"} <= set(r["timings"])  # lavapipe: a CPU
    assert r["metrics"]["accuracy"] > 0.8
    if runner == "py_core-native":  # labelled with the adapter it ran on
        assert r["hardware"] == f"{r['adapter']['device']} ({r['adapter']['backend_type']})"


MICRO = {"kind": "transformer", "text": "shakespeare",
         "params": {"preset": "micro", "steps": 3, "eval_steps": 1, "seed": 5, "sample_chars": 8}}


@pytest.mark.native
def test_torch_and_pycore_native_train_the_same_model(data_dir):
    """The PyTorch twin and py_core's WGSL on wgpu-native start from the same weights and batches."""
    torch_out = execute("torch", MICRO, str(data_dir), "cpu")
    assert torch_out["status"] == "done", torch_out
    ours = execute("py_core-native", MICRO, str(data_dir), "cpu")
    assert ours["status"] == "done", ours
    a, b = torch_out["result"]["metrics"], ours["result"]["metrics"]
    assert [s for s, _ in a["loss_curve"]] == [s for s, _ in b["loss_curve"]] == [0, 1, 2]
    assert b["loss_curve"][0][1] == pytest.approx(a["loss_curve"][0][1], rel=1e-4)
    assert b["val_loss"] == pytest.approx(a["val_loss"], rel=1e-3)
    assert torch_out["result"]["timings"]["step"] > 0


def test_unknown_text_fails(data_dir):
    out = execute("torch", {**MICRO, "text": "0" * 32}, str(data_dir), "cpu")
    assert out["status"] == "failed" and "no text" in out["error"]
