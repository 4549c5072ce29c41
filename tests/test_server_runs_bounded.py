"""Issue 16, points 2 and 5: listing returns summaries from stored columns (never bodies), with a
cursor; old databases are migrated; retention caps; DELETE; a schema per field at POST."""

import json
import sqlite3
import tracemalloc
import uuid

import pytest

from server.runs import SUMMARY_COLUMNS


def run_of(**fields):
    run = {"id": str(uuid.uuid4()), "kind": "random_forest",
           "config": {"kind": "random_forest", "dataset": "diabetes", "params": {"n_estimators": 10}},
           "backend": "webgpu", "adapter": {"vendor": "nvidia", "is_fallback_adapter": False},
           "metrics": {"mse": 3042.5}, "timings": {"fit": 0.25, "total": 1.5}}
    run.update(fields)
    return run


def test_list_gives_summaries_not_bodies(client):
    run = run_of(extra={"curve": list(range(1000))})
    client.post("/api/runs", json=run)
    listed = client.get("/api/runs").json()["runs"]
    assert listed == [{"id": run["id"], "kind": "random_forest", "created_at": listed[0]["created_at"],
                       "dataset": "diabetes", "backend": "webgpu", "device": "webgpu · nvidia",
                       "metric": "mse", "value": 3042.5, "main_time": 0.25, "total_time": 1.5,
                       "note": None, "params": {"n_estimators": 10}, "size": listed[0]["size"], "target": None}]
    assert listed[0]["size"] > 4000  # the body's bytes, counted; the body itself is not sent
    selftest = {"id": str(uuid.uuid4()), "kind": "selftest", "backend": "webgpu",
                "adapter": {"vendor": "google", "is_fallback_adapter": True},
                "metrics": {"all_ok": True, "kernels": [{"name": "matmul", "ok": True}] * 3},
                "timings": {"kernels": 0.5}}
    client.post("/api/runs", json=selftest)
    first = client.get("/api/runs").json()["runs"][0]
    assert (first["note"], first["device"], first["main_time"], first["metric"]) == (
        "3 kernels ok", "webgpu · google (software)", 0.5, None)


def test_listing_large_runs_reads_no_body(client, settings):
    """60 runs of nearly 1 MB each: a page of them costs kilobytes of memory, not the bodies."""
    big = "x" * (settings.max_json_bytes - 4096)
    for _ in range(60):
        assert client.post("/api/runs", json=run_of(extra={"blob": big})).status_code == 201
    tracemalloc.start()
    try:
        r = client.get("/api/runs?limit=60")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(r.json()["runs"]) == 60 and len(r.content) < 30_000
    assert peak < 2 * settings.max_json_bytes, peak  # was 60 bodies parsed at once


def test_cursor_pages_through_everything_once(client):
    ids = [client.post("/api/runs", json=run_of(kind="transformer" if i % 3 else "selftest",
                                                config={})).json()["id"] for i in range(25)]
    seen, cursor, pages = [], None, 0
    while True:
        r = client.get("/api/runs", params={"limit": 7, **({"cursor": cursor} if cursor else {})}).json()
        seen += [x["id"] for x in r["runs"]]
        pages += 1
        cursor = r["next"]
        if cursor is None:
            break
    assert seen == ids[::-1] and pages == 4
    tf = client.get("/api/runs", params={"kind": "transformer", "limit": 5}).json()
    page2 = client.get("/api/runs", params={"kind": "transformer", "limit": 5, "cursor": tf["next"]}).json()
    assert [x["id"] for x in tf["runs"] + page2["runs"]] == [i for n, i in enumerate(ids) if n % 3][::-1][:10]


def test_filters_by_dataset_and_device_and_facets(client):
    a = run_of()
    b = run_of(config={"dataset": "iris"}, adapter={"vendor": "amd"})
    for r in (a, b):
        client.post("/api/runs", json=r)
    assert [x["id"] for x in client.get("/api/runs?dataset=iris").json()["runs"]] == [b["id"]]
    assert [x["id"] for x in client.get("/api/runs", params={"device": "webgpu · nvidia"}).json()["runs"]] == [a["id"]]
    assert client.get("/api/runs/facets").json() == {
        "kinds": ["random_forest"], "datasets": ["diabetes", "iris"],
        "devices": ["webgpu · amd", "webgpu · nvidia"]}


@pytest.mark.parametrize("query, field", [
    ("limit=" + "9" * 5000, "limit"), ("offset=" + "1" * 4301, "offset"),
    ("cursor=" + "x" * 300, "cursor"), ("cursor=bm9wZQ", "cursor"), ("cursor=%FF%FE", "cursor"),
    ("cursor=WyJhIiwgdHJ1ZV0", "cursor"), ("dataset=" + "d" * 300, "dataset"),
])
def test_huge_or_bad_query_values_are_400(client, query, field):
    r = client.get(f"/api/runs?{query}")
    assert r.status_code == 400 and r.json()["error"]["field"] == field, r.text


def test_delete_own_run(client):
    run = run_of()
    client.post("/api/runs", json=run)
    gone = []
    client.app.state.on_run_deleted.append(gone.append)
    assert client.delete(f"/api/runs/{run['id'].upper()}").status_code == 204
    assert client.get(f"/api/runs/{run['id']}").status_code == 404
    assert client.get("/api/runs").json()["runs"] == [] and gone == [run["id"]]
    assert client.delete(f"/api/runs/{run['id']}").status_code == 404
    assert client.delete("/api/runs/not-a-uuid").status_code == 404


def test_delete_is_refused_cross_site(client):
    run = run_of()
    client.post("/api/runs", json=run)
    r = client.delete(f"/api/runs/{run['id']}", headers={"origin": "http://evil.example"})
    assert r.status_code == 403
    assert client.get(f"/api/runs/{run['id']}").status_code == 200


def test_retention_keeps_the_newest(settings):
    from conftest import TestClient
    from server.app import create_app
    settings.max_runs = 5
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        ids = [client.post("/api/runs", json=run_of()).json()["id"] for _ in range(8)]
        assert [x["id"] for x in client.get("/api/runs").json()["runs"]] == ids[::-1][:5]
        assert client.get(f"/api/runs/{ids[0]}").status_code == 404
    settings.max_runs, settings.max_runs_mb = 1000, 1
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        blob = "y" * 300_000
        ids = [client.post("/api/runs", json=run_of(extra={"b": blob})).json()["id"] for _ in range(5)]
        listed = client.get("/api/runs").json()["runs"]
        assert [x["id"] for x in listed] == ids[::-1][:3]  # 3 x 300 KB fit in 1 MB, 4 do not
        assert sum(x["size"] for x in listed) <= 2**20


def test_retention_says_so_and_spares_runs_with_queued_jobs(settings, monkeypatch):
    """Issue 31: retention deleted other clients' runs without a word, queued jobs and all. Now
    the post that caused it says how many went, their ids answer 404 saying why, and a run whose
    job is queued (no scheduler here: it stays queued) is not taken."""
    from conftest import TestClient
    from robust_server import free_port
    from server import cluster
    from server.app import create_app
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    settings.comparisons, settings.comparison_runners = "on", "sklearn"
    settings.cluster = f"tcp://127.0.0.1:{free_port()}"
    settings.max_runs = 3
    job = {"kind": "random_forest", "dataset": "iris", "target": "target",
           "params": {"n_estimators": 5, "random_state": 0}}
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        waiting = client.post("/api/runs", json=run_of(config=job)).json()["id"]
        old = [client.post("/api/runs", json=run_of(kind="selftest")).json()["id"] for _ in range(2)]
        r = client.post("/api/runs", json=run_of(kind="selftest"))
        assert r.status_code == 201 and r.headers["x-runs-retired"] == "1"
        gone = client.get(f"/api/runs/{old[0]}")
        assert gone.status_code == 404 and "--max-runs 3" in gone.json()["error"]["message"]
        assert client.get(f"/api/runs/{waiting}").status_code == 200
        rows = client.get(f"/api/runs/{waiting}/comparisons").json()["comparisons"]
        assert [c["status"] for c in rows if c["runner"] == "sklearn"] == ["queued"]
        r = client.post("/api/runs", json=run_of(kind="selftest"))
        assert r.headers["x-runs-retired"] == "1" and client.get(f"/api/runs/{old[1]}").status_code == 404
        r = client.get(f"/api/runs/{uuid.uuid4()}")  # never stored: the plain answer
        assert r.status_code == 404 and r.json()["error"]["message"] == "no run with this id"


def test_old_database_is_migrated_and_readable(settings):
    """A runs table from before the summary columns, with one run as an older server stored it
    (an object where a string belongs): start-up adds and fills the columns."""
    settings.data_dir.mkdir(parents=True)
    conn = sqlite3.connect(settings.db_path)
    conn.executescript("""CREATE TABLE runs (id TEXT PRIMARY KEY, kind TEXT NOT NULL,
        created_at TEXT NOT NULL, body TEXT NOT NULL);""")
    bad = {"id": str(uuid.uuid4()), "kind": "random_forest", "created_at": "2026-01-01T00:00:00Z",
           "backend": "webgpu", "adapter": {"vendor": {"toString": 1}}, "config": {"dataset": ["x"]},
           "metrics": {"mse": "low"}, "timings": {"fit": {"s": 1}}}
    good = {**run_of(), "created_at": "2026-01-02T00:00:00Z"}
    for r in (bad, good):
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?)", (r["id"], r["kind"], r["created_at"], json.dumps(r)))
    conn.commit()
    conn.close()
    from conftest import TestClient
    from server.app import create_app
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        listed = client.get("/api/runs").json()["runs"]
        assert [x["id"] for x in listed] == [good["id"], bad["id"]]
        assert listed[0]["metric"] == "mse" and listed[0]["dataset"] == "diabetes"
        assert {k: listed[1][k] for k in ("dataset", "device", "metric", "value", "main_time")} == {
            "dataset": None, "device": "webgpu", "metric": None, "value": None, "main_time": None}
        assert client.get(f"/api/runs/{bad['id']}").json()["adapter"] == bad["adapter"]
        assert client.delete(f"/api/runs/{bad['id']}").status_code == 204
    with sqlite3.connect(settings.db_path) as conn:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert set(SUMMARY_COLUMNS) <= cols


def test_a_database_from_before_the_target_column_gets_its_targets(settings):
    """The Runs tab's Target column: a database of the summaries but the target (as stored before
    it) gains the column at start-up, filled from each run's config."""
    settings.data_dir.mkdir(parents=True)
    old = [c for c in SUMMARY_COLUMNS if c != "target"]
    conn = sqlite3.connect(settings.db_path)
    conn.execute(f"CREATE TABLE runs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, created_at TEXT NOT NULL, "
                 f"body TEXT NOT NULL, {', '.join(old)})")
    run = run_of(config={"kind": "random_forest", "dataset": "wine", "target": "target", "params": {}})
    conn.execute("INSERT INTO runs (id, kind, created_at, body, size) VALUES (?, ?, ?, ?, ?)",
                 (run["id"], run["kind"], "2026-01-01T00:00:00Z", json.dumps(run), 10))
    conn.commit()
    conn.close()
    from conftest import TestClient
    from server.app import create_app
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        listed = client.get("/api/runs").json()["runs"]
        assert listed[0]["target"] == "target" and listed[0]["dataset"] == "wine"
        posted = run_of(config={"dataset": "diabetes", "target": "progression"})
        client.post("/api/runs", json=posted)
        assert client.get("/api/runs").json()["runs"][0]["target"] == "progression"


@pytest.mark.parametrize("change, field", [
    ({"adapter": {"vendor": {"toString": 1}}}, "adapter.vendor"),
    ({"adapter": {"vendor": "v" * 257}}, "adapter.vendor"),
    ({"adapter": {"is_fallback_adapter": "yes"}}, "adapter.is_fallback_adapter"),
    ({"config": {"dataset": {"name": "iris"}}}, "config.dataset"),
    ({"config": {"text": 5}}, "config.text"),
    ({"config": {"features": ["a", 1]}}, "config.features[1]"),
    ({"config": {"params": [1]}}, "config.params"),
    ({"metrics": {"mse": "3042"}}, "metrics.mse"),
    ({"metrics": {"accuracy": True}}, "metrics.accuracy"),
    ({"metrics": {"all_ok": 1}}, "metrics.all_ok"),
    ({"metrics": {"kernels": [{"name": {"x": 1}}]}}, "metrics.kernels[0].name"),
    ({"metrics": {"kernels": [{"name": "m", "time_s": "1 ms"}]}}, "metrics.kernels[0].time_s"),
    ({"metrics": {"loss_curve": [[0, 1.5], [1, "x"]]}}, "metrics.loss_curve[1][1]"),
    ({"metrics": {"errors": [{"label": "a", "message": None}]}}, "metrics.errors[0].message"),
    ({"metrics": {"n_test": 1.5}}, "metrics.n_test"),
])
def test_schema_names_the_field(client, change, field):
    r = client.post("/api/runs", json=run_of(**change))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["field"] == field
    assert client.get("/api/runs").json()["runs"] == []


def test_schema_accepts_what_the_page_posts(client):
    run = run_of(
        config={"kind": "transformer", "text": "shakespeare", "params": {"steps": 12, "lr": 0.003}},
        adapter={"vendor": "google", "architecture": "swiftshader", "device": "", "description": "",
                 "is_fallback_adapter": True, "subgroup_min_size": 4, "tensor_cores": None,
                 "subgroup_matrix_configs": [{"component": "f16", "M": 8, "N": 8, "K": 8}]},
        metrics={"loss_curve": [[0, 4.2], [1, 3.9]], "val_loss": 3.9, "val_curve": [[1, 3.9]],
                 "tokens": 123, "free": {"any": ["thing", 1, None]}},
        env={"user_agent": "Chromium", "limits": {"maxBufferSize": 268435456}},
        extra={"sample": "To be"})
    assert client.post("/api/runs", json=run).status_code == 201
