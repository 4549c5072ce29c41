"""server.comparisons through its HTTP API: a posted run gets its comparisons, they run in a worker
process, unavailable runners say why, and no job is lost to a killed worker or a dead server."""

import json
import multiprocessing
import os
import signal
import sqlite3
import time
import uuid

import pytest
from starlette.testclient import TestClient  # conftest imported it quietly already

from server.app import create_app
from server.comparisons import DIED, agreement, speedup

TERMINAL = {"done", "failed", "unavailable"}


def forest_job(dataset="iris", target="target", **params):
    return {"kind": "random_forest", "dataset": dataset, "target": target,
            "params": {"n_estimators": 10, "random_state": 0, **params},
            "split": {"test_size": 0.2, "seed": 42}}


def post(client, job, **fields):
    run = {"id": str(uuid.uuid4()), "kind": job["kind"], "config": job, "backend": "webgpu",
           "metrics": {}, "timings": {"fit": 1.0}, **fields}
    r = client.post("/api/runs", json=run)
    assert r.status_code == 201, r.text
    return run["id"]


def wait_for(client, run_id, runner, statuses=TERMINAL, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/api/runs/{run_id}/comparisons").json()
        row = {c["runner"]: c for c in body["comparisons"]}[runner]
        if row["status"] in statuses:
            return body, row
        assert time.monotonic() < deadline, f"{runner} still {row['status']} after {timeout} s"
        time.sleep(0.1)


@pytest.fixture
def sklearn_only(settings):
    """Comparisons on, only the sklearn runner (the others show as turned off)."""
    settings.comparisons = "on"
    settings.comparison_runners = "sklearn"
    return settings


def test_sklearn_comparison_end_to_end(sklearn_only):
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        run_id = post(client, forest_job("iris"), metrics={"accuracy": 0.95})
        body, row = wait_for(client, run_id, "sklearn")
    assert row["status"] == "done", row["error"]
    assert body["run"] == run_id and body["device"] == "cpu" and body["enabled"]
    assert row["device"] == "cpu" and row["versions"]["scikit-learn"]
    assert set(row["timings"]) >= {"fit", "predict", "total"}
    assert 0 < row["timings"]["fit"] <= row["timings"]["total"]
    assert set(row["metrics"]) == {"accuracy", "f1", "log_loss"}
    assert row["metrics"]["accuracy"] > 0.8 and row["metrics"]["log_loss"] > 0
    assert row["rows"] == {"train": 120, "test": 30}  # py_core.data's split of 150 rows
    assert row["speedup"] == pytest.approx(1.0 / row["timings"]["fit"])
    assert row["agreement"]["metric"] == "accuracy"
    assert row["started_at"] <= row["finished_at"]


def test_regression_metrics_and_unavailable_runners(sklearn_only):
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        run_id = post(client, forest_job("diabetes", max_depth=6))
        body, row = wait_for(client, run_id, "sklearn")
    assert row["status"] == "done", row["error"]
    m = row["metrics"]
    assert set(m) == {"mse", "mae", "r2"} and 2000 < m["mse"] < 5000 and 0.2 < m["r2"] < 0.7
    assert row["params"]["max_depth"] == 6 and row["params"]["n_jobs"] == -1
    others = {c["runner"]: c for c in body["comparisons"] if c["runner"] != "sklearn"}
    assert set(others) == {"xgboost", "lightgbm", "cuml", "py_core-native", "py_core-reference"}
    for c in others.values():  # none vanishes; each says why it did not run
        assert c["status"] == "unavailable" and "turned off" in c["error"]


def test_cuml_without_cuda_says_why(settings):
    settings.comparison_runners = "cuml"
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        run_id = post(client, forest_job())
        _, row = wait_for(client, run_id, "cuml")
        assert client.app.state.comparisons._pool is None  # decided without a worker
    assert row["status"] == "unavailable" and "no CUDA device" in row["error"]


def test_a_run_without_a_job_fails_at_once(settings):
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        run_id = post(client, {"kind": "random_forest"}, config={"n_estimators": 10})
        body = client.get(f"/api/runs/{run_id}/comparisons").json()
        assert client.app.state.comparisons._pool is None
    assert {c["status"] for c in body["comparisons"]} == {"failed"}
    assert all("config is not its job" in c["error"] for c in body["comparisons"])


def test_kinds_without_runners_get_none(settings):
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        run_id = post(client, {"kind": "selftest"})
        assert client.get(f"/api/runs/{run_id}/comparisons").json()["comparisons"] == []


def test_unknown_run_is_404(client):
    assert client.get(f"/api/runs/{uuid.uuid4()}/comparisons").status_code == 404
    assert client.get("/api/runs/not-a-uuid/comparisons").status_code == 404
    r = client.post(f"/api/runs/{uuid.uuid4()}/comparisons")
    assert r.status_code == 404 and r.json()["error"]["field"] == "id"


def test_comparisons_off(settings):
    settings.comparisons = "off"
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        run_id = post(client, forest_job())
        body = client.get(f"/api/runs/{run_id}/comparisons").json()
        assert body["enabled"] is False and body["comparisons"] == []
        assert client.post(f"/api/runs/{run_id}/comparisons").status_code == 409


# A job long enough to be caught running: sklearn, 400 trees on 20,000 rows (some seconds).
SLOW = forest_job("synthetic:regression?n_samples=20000&n_features=20", target="y",
                  n_estimators=400)


def test_killed_worker_marks_the_job_failed_and_the_queue_goes_on(sklearn_only):
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        slow = post(client, SLOW)
        wait_for(client, slow, "sklearn", {"running"})
        deadline = time.monotonic() + 30
        while not (workers := multiprocessing.active_children()):
            assert time.monotonic() < deadline, "no worker process started"
            time.sleep(0.05)
        for proc in workers:
            os.kill(proc.pid, signal.SIGKILL)
        _, row = wait_for(client, slow, "sklearn")
        assert row["status"] == "failed" and "worker process" in row["error"]
        # A new pool takes the next job, and a failed comparison can be queued again.
        quick = post(client, forest_job("iris"))
        assert wait_for(client, quick, "sklearn")[1]["status"] == "done"
        r = client.post(f"/api/runs/{slow}/comparisons", json={"runners": ["sklearn"]})
        assert r.status_code == 202
        again = {c["runner"]: c for c in r.json()["comparisons"]}["sklearn"]
        assert again["status"] in ("queued", "running") and again["error"] is None


def _rows(settings, run_id):
    with sqlite3.connect(settings.db_path) as conn:
        return dict(conn.execute("SELECT runner, status FROM comparisons WHERE run_id = ?",
                                 (run_id,)).fetchall())


def test_shutdown_requeues_and_restart_resumes(sklearn_only):
    app = create_app(sklearn_only)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        slow = post(client, SLOW)
        wait_for(client, slow, "sklearn", {"running"})
    # A clean shutdown kills the job's worker and puts it back in the queue ...
    assert _rows(sklearn_only, slow)["sklearn"] == "queued"
    assert multiprocessing.active_children() == []
    # ... and the next start runs it (a small job instead, to keep the test short).
    with sqlite3.connect(sklearn_only.db_path) as conn:
        body = json.loads(conn.execute("SELECT body FROM runs WHERE id = ?", (slow,)).fetchone()[0])
        body["config"] = forest_job("iris")
        conn.execute("UPDATE runs SET body = ? WHERE id = ?", (json.dumps(body), slow))
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        assert wait_for(client, slow, "sklearn")[1]["status"] == "done"


def test_a_job_left_running_by_a_dead_server_is_marked_failed(sklearn_only):
    sklearn_only.comparisons = "off"
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        crashed, waiting = post(client, forest_job()), post(client, forest_job())
    # What a server killed mid-job leaves behind: one row running, one queued.
    with sqlite3.connect(sklearn_only.db_path) as conn:
        conn.executemany(
            "INSERT INTO comparisons (run_id, runner, status, device, created_at, started_at) "
            "VALUES (?, 'sklearn', ?, 'cpu', '2026-01-01T00:00:00Z', ?)",
            [(crashed, "running", "2026-01-01T00:00:01Z"), (waiting, "queued", None)])
    sklearn_only.comparisons = "on"
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        _, row = wait_for(client, crashed, "sklearn")
        assert row["status"] == "failed" and row["error"] == DIED and row["finished_at"]
        assert wait_for(client, waiting, "sklearn")[1]["status"] == "done"


def test_requeue_refuses_unknown_runners(sklearn_only):
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        run_id = post(client, {"kind": "random_forest"})
        r = client.post(f"/api/runs/{run_id}/comparisons", json={"runners": ["nope"]})
        assert r.status_code == 400 and r.json()["error"]["field"] == "runners"


def test_speedup_and_agreement():
    assert speedup("random_forest", {"fit": 2.0}, {"fit": 0.5}) == 4.0
    assert speedup("transformer", {"step": 0.01}, {"step": 0.02}) == 0.5
    assert speedup("random_forest", {}, {"fit": 0.5}) is None
    # Another forest: the browser's MSE may be up to 2% worse, any amount better.
    assert agreement("random_forest", "sklearn", {"mse": 101.9}, {"mse": 100.0})["within"]
    assert not agreement("random_forest", "sklearn", {"mse": 102.1}, {"mse": 100.0})["within"]
    assert agreement("random_forest", "sklearn", {"mse": 80.0}, {"mse": 100.0})["within"]
    assert not agreement("random_forest", "sklearn", {"accuracy": 0.9}, {"accuracy": 0.92})["within"]
    # The same forest (py_core on another backend): equal to float tolerance, either way.
    assert not agreement("random_forest", "py_core-native", {"mse": 99.0}, {"mse": 100.0})["within"]
    assert agreement("random_forest", "py_core-native", {"accuracy": 0.9}, {"accuracy": 0.9})["within"]
    assert agreement("transformer", "torch", {"val_loss": 2.0}, {"val_loss": 2.03})["within"]
    assert agreement("random_forest", "sklearn", {}, {"mse": 1.0}) is None


def test_workers_ignore_the_terminals_signals_but_not_a_dead_server(tmp_path):
    """Ctrl-C reaches the whole process group: workers leave their lifetime to the server. And
    a worker whose server died without cleaning up (SIGKILL) ends within seconds."""
    import subprocess
    import sys
    import textwrap
    from concurrent.futures import ProcessPoolExecutor

    from server.runners import worker_init

    with ProcessPoolExecutor(1, multiprocessing.get_context("spawn"), initializer=worker_init,
                             initargs=(os.getpid(),)) as pool:
        pid = pool.submit(os.getpid).result()
        job = pool.submit(time.sleep, 1.0)
        for sig in (signal.SIGINT, signal.SIGTERM):
            os.kill(pid, sig)
        assert job.result(timeout=30) is None  # finished, not interrupted

    script = textwrap.dedent("""
        import multiprocessing, os, sys, time
        from concurrent.futures import ProcessPoolExecutor
        from server.runners import worker_init
        if __name__ == "__main__":
            pool = ProcessPoolExecutor(1, multiprocessing.get_context("spawn"),
                                       initializer=worker_init, initargs=(os.getpid(),))
            print(pool.submit(os.getpid).result(), flush=True)
            pool.submit(time.sleep, 600)
            time.sleep(0.5)
            os.kill(os.getpid(), 9)  # the server dies without a word to its workers
    """)
    (tmp_path / "server_dies.py").write_text(script)
    out = subprocess.run([sys.executable, str(tmp_path / "server_dies.py")], capture_output=True,
                         text=True, timeout=60, cwd=os.getcwd(),
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    worker = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{worker}") and "zombie" not in _state(worker):
        assert time.monotonic() < deadline, "the orphaned worker kept running"
        time.sleep(0.1)


def _state(pid) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            return f.read().lower()
    except OSError:
        return "gone"
