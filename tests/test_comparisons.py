"""server.comparisons through its HTTP API: a posted run gets its comparisons, they run in a worker
process, unavailable runners say why, and no job is lost to a killed worker or a dead server."""

import json
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
        assert client.app.state.comparisons.client is None  # decided without a cluster
    assert row["status"] == "unavailable" and "no CUDA device" in row["error"]


def test_a_run_without_a_job_fails_at_once(settings):
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        run_id = post(client, {"kind": "random_forest"}, config={"n_estimators": 10})
        body = client.get(f"/api/runs/{run_id}/comparisons").json()
        assert client.app.state.comparisons.client is None
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


# A job long enough to be caught running: sklearn, 300 trees on 20,000 rows (some seconds).
SLOW = forest_job("synthetic:regression?n_samples=20000&n_features=20", target="y",
                  n_estimators=300)


# Long enough to be caught mid-job, short enough to run twice: some seconds on 2 busy cores.
MEDIUM = forest_job("synthetic:regression?n_samples=6000&n_features=10", target="y",
                    n_estimators=80)


def _job_processes():
    """(job process, its Dask worker) pairs: server/runners/jobproc.py children of workers."""
    import psutil
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "server.runners.jobproc" in " ".join(proc.cmdline()):
                out.append((proc, proc.parent()))
        except psutil.Error:
            pass
    return out


def _busy_worker(timeout=60):
    """The worker whose job process is computing (the one that uses CPU)."""
    deadline = time.monotonic() + timeout
    while True:
        for proc, worker in _job_processes():
            if proc.cpu_percent(interval=0.2) > 5:
                return worker
        assert time.monotonic() < deadline, "no job process is computing"


def _computing(proc) -> bool:
    import psutil
    try:
        return proc.status() != "zombie" and proc.cpu_percent(0.2) > 5
    except psutil.Error:
        return False


@pytest.fixture
def two_workers(sklearn_only):
    sklearn_only.comparison_workers = 2
    return sklearn_only


def test_a_killed_worker_is_retried_on_the_other_and_stored_once(two_workers):
    with TestClient(create_app(two_workers), base_url="http://127.0.0.1") as client:
        slow = post(client, MEDIUM)
        wait_for(client, slow, "sklearn", {"running"})
        worker = _busy_worker()
        os.kill(worker.pid, signal.SIGKILL)  # the worker and (its watchdog) its job process
        _, row = wait_for(client, slow, "sklearn", timeout=180)
        assert row["status"] == "done", row["error"]
        assert row["worker"]["pid"] != worker.pid  # it ran again, on another worker
        assert row["metrics"]["r2"] > 0.5
    with sqlite3.connect(two_workers.db_path) as conn:
        rows = conn.execute("SELECT status, result FROM comparisons WHERE run_id = ? AND "
                            "runner = 'sklearn'", (slow,)).fetchall()
    assert len(rows) == 1 and rows[0][0] == "done"


def test_twenty_jobs_on_two_workers_run_two_at_a_time(two_workers):
    with TestClient(create_app(two_workers), base_url="http://127.0.0.1") as client:
        ids = [post(client, forest_job("iris", n_estimators=5, random_state=i)) for i in range(20)]
        most = 0
        for run_id in ids:
            deadline = time.monotonic() + 240
            while True:
                rows = client.get(f"/api/runs/{run_id}/comparisons").json()["comparisons"]
                row = {c["runner"]: c for c in rows}["sklearn"]
                with sqlite3.connect(two_workers.db_path) as conn:
                    most = max(most, conn.execute("SELECT COUNT(*) FROM comparisons WHERE "
                                                  "status = 'running'").fetchone()[0])
                if row["status"] in TERMINAL:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert row["status"] == "done", row["error"]
        workers = [wait_for(client, i, "sklearn")[1]["worker"] for i in ids]
    assert most <= 2  # the server claims no more jobs than the cluster has worker threads
    assert len({w["pid"] for w in workers}) == 2  # both workers took jobs
    # On the workers' own clocks: never more than two jobs at once, and two at some point.
    events = sorted([(w["started"], 1) for w in workers] + [(w["finished"], -1) for w in workers])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    assert peak == 2


CAPPED = [  # (job, the cap it breaks, what its message says, the 422's field)
    (forest_job("iris", n_estimators=1_000_000), "max_trees",
     "max_trees (n_estimators of a random_forest job): 1,000,000 > 1,000 (--max-trees raises it)",
     "config.params.n_estimators"),
    (forest_job("synthetic:regression?n_samples=1e9", target="y"), "max_table_cells",
     "max_table_cells (rows x columns of a generated data set): 1.1e+10 > 1e+08 "
     "(--max-table-cells raises it)", "config.dataset"),
    ({"kind": "transformer", "text": "shakespeare",
      "params": {"preset": "shakespeare_char", "n_layer": 1000}}, "max_transformer_cost",
     "max_transformer_cost (parameters x tokens a step x steps of a transformer job): ",
     "config.params"),
]


@pytest.mark.parametrize("job, cap, says, field", CAPPED, ids=[c[1] for c in CAPPED])
def test_a_job_over_a_cap_is_refused_alike_by_both_routes(sklearn_only, job, cap, says, field):
    """POST /api/runs stores the run (it ran in the browser) and its comparisons say which cap;
    POST .../comparisons answers 422 with the very message; neither queues anything."""
    sklearn_only.max_trees = 1000
    sklearn_only.comparison_runners = "sklearn,torch"
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        run_id = post(client, job)
        rows = {c["runner"]: c for c in client.get(f"/api/runs/{run_id}/comparisons").json()
                ["comparisons"]}
        runner = "sklearn" if job["kind"] == "random_forest" else "torch"
        expected = f"this job is over the server's limit {says}"
        assert rows[runner]["status"] == "unavailable"
        assert rows[runner]["error"].startswith(expected)
        for other, row in rows.items():  # their own reason, not the cap's
            if other != runner:
                assert row["status"] == "unavailable" and "turned off" in row["error"], other
        r = client.post(f"/api/runs/{run_id}/comparisons")
        assert r.status_code == 422 and r.json()["error"] == {"message": rows[runner]["error"],
                                                              "field": field}
        again = {c["runner"]: c for c in client.get(f"/api/runs/{run_id}/comparisons").json()
                 ["comparisons"]}
        assert again == rows  # a refused request changes nothing
        assert client.app.state.comparisons.client is None  # nothing queued: no cluster


def test_queue_limits_429_and_cancel(sklearn_only):
    sklearn_only.client_queue_limit = 1
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        slow = post(client, SLOW)
        wait_for(client, slow, "sklearn", {"running"})
        run = {"id": str(uuid.uuid4()), "kind": "random_forest", "config": forest_job()}
        r = client.post("/api/runs", json=run)
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        assert "client-queue-limit" in r.json()["error"]["message"]
        assert client.get(f"/api/runs/{run['id']}").status_code == 404  # not stored
        # A run over a cap queues nothing, so a full queue does not refuse it: it is stored.
        capped = post(client, forest_job(n_estimators=10**6))
        row = wait_for(client, capped, "sklearn")[1]
        assert row["status"] == "unavailable" and "max_trees" in row["error"]
        r = client.post(f"/api/runs/{slow}/comparisons", json={"runners": ["sklearn"]})
        assert r.status_code == 202  # already running: nothing more queued
        worker = _busy_worker()
        r = client.delete(f"/api/runs/{slow}/comparisons")
        assert r.status_code == 200
        row = {c["runner"]: c for c in r.json()["comparisons"]}["sklearn"]
        assert row["status"] == "failed" and row["error"] == "cancelled"
        deadline = time.monotonic() + 30  # the job's process is killed, its worker lives on
        while any(_computing(p) for p, _ in _job_processes()):
            assert time.monotonic() < deadline, "the cancelled job kept computing"
        assert worker.is_running()
        assert client.post("/api/runs", json=run).status_code == 201  # room again
        assert wait_for(client, run["id"], "sklearn")[1]["status"] == "done"
        assert wait_for(client, slow, "sklearn")[1]["error"] == "cancelled"  # never re-queued
        assert client.delete(f"/api/runs/{uuid.uuid4()}/comparisons").status_code == 404


def test_the_global_queue_limit(sklearn_only):
    sklearn_only.queue_limit = 1
    sklearn_only.comparison_workers = 1
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        slow = post(client, SLOW)
        r = client.post("/api/runs", json={"id": str(uuid.uuid4()), "kind": "random_forest",
                                           "config": forest_job()})
        assert r.status_code == 429 and "queue-limit" in r.json()["error"]["message"]
        assert r.headers["Retry-After"].isdigit()
        client.delete(f"/api/runs/{slow}/comparisons")


def test_limits_kill_a_job_and_it_is_not_requeued(sklearn_only):
    sklearn_only.job_timeout_s = 1.0
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        slow = post(client, SLOW)
        _, row = wait_for(client, slow, "sklearn")
        assert row["status"] == "failed" and "time limit of 1 s" in row["error"]
        time.sleep(1.5)  # a re-queued job would be running again by now
        assert wait_for(client, slow, "sklearn")[1]["status"] == "failed"
    sklearn_only.job_timeout_s, sklearn_only.job_memory_mb = 600, 40
    with TestClient(create_app(sklearn_only), base_url="http://127.0.0.1") as client:
        run_id = post(client, SLOW)
        _, row = wait_for(client, run_id, "sklearn")
        assert row["status"] == "failed" and "limit of 40 MB" in row["error"]


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
    assert _job_processes() == []
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
        # The same body chunked (no Content-Length) is read, and bounded, alike (issue 31).
        chunked = {"content-type": "application/json"}
        r = client.post(f"/api/runs/{run_id}/comparisons", headers=chunked,
                        content=iter([b'{"runners": ', b'["nope"]}']))
        assert r.status_code == 400 and r.json()["error"]["field"] == "runners"
        big = (b" " * 65536 for _ in range(20))  # 1.25 MB against the 1 MB cap
        r = client.post(f"/api/runs/{run_id}/comparisons", headers=chunked, content=big)
        assert r.status_code == 413


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


def test_a_job_process_ends_when_its_worker_dies(tmp_path):
    """A worker killed mid-job (SIGKILL) leaves no orphan computing: its job process ends."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import os, time
        from server.runners.task import JobProcess
        p = JobProcess()
        print(p.proc.pid, flush=True)
        time.sleep(1.0)
        os.kill(os.getpid(), 9)  # the worker dies without a word to its job process
    """)
    (tmp_path / "worker_dies.py").write_text(script)
    out = subprocess.run([sys.executable, str(tmp_path / "worker_dies.py")], capture_output=True,
                         text=True, timeout=60, cwd=os.getcwd(),
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    child = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{child}") and "zombie" not in _state(child):
        assert time.monotonic() < deadline, "the orphaned job process kept running"
        time.sleep(0.1)


def _state(pid) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            return f.read().lower()
    except OSError:
        return "gone"
