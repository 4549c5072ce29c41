"""Comparison jobs through outages (issue 31, points 5 and 6): a Dask scheduler that is not there
yet, or goes away, is tried again with backoff while the jobs wait queued and say why; a job that
ends while the store refuses writes keeps its end in memory and records it once it can."""

import threading
import uuid
import warnings

import pytest
from starlette.testclient import TestClient  # conftest imported it quietly already
from test_comparisons import forest_job, post, wait_for

from robust_server import free_port
from server import cluster, comparisons, job_ends
from server.app import create_app
from server.store import StoreUnavailable


@pytest.fixture
def quick_retries(monkeypatch):
    """The backoff of a test: tried again after 0.2 s, at most every second, 1 s an attempt."""
    monkeypatch.setattr(cluster, "RETRY_S", (0.2, 1.0))
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)


def _scheduler(port: int):
    """A Dask scheduler on `port` with one worker thread (in this process: it starts in about a
    second; the job still runs in a process of its own, as on any worker)."""
    from distributed import LocalCluster
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "dashboard is discouraged": it is off
        return LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                            scheduler_port=port, host="127.0.0.1", dashboard_address=None,
                            dashboard=False)


def test_an_absent_scheduler_is_tried_again_and_the_jobs_wait_saying_why(settings, quick_retries):
    port = free_port()
    settings.comparisons, settings.comparison_runners = "on", "sklearn"
    settings.cluster = f"tcp://127.0.0.1:{port}"
    clusters = []
    try:
        with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
            first = post(client, forest_job("iris"))
            queue = client.app.state.comparisons
            while queue.dask.attempts < 2:  # two failed attempts at least: the first is not the last
                threading.Event().wait(0.1)
            body, row = wait_for(client, first, "sklearn", {"queued"})
            assert f"127.0.0.1:{port} cannot be reached" in body["problem"]
            assert row["waiting"] == body["problem"]
            clusters.append(_scheduler(port))  # the scheduler comes up: the queued job runs
            body, row = wait_for(client, first, "sklearn")
            assert row["status"] == "done", row["error"]
            assert body["problem"] is None and row["waiting"] is None
            # It goes away: jobs posted meanwhile wait, saying so; back, they run.
            clusters.pop().close()
            while queue.problem is None:
                threading.Event().wait(0.1)
            second = post(client, forest_job("iris", random_state=1))
            body, row = wait_for(client, second, "sklearn", {"queued"})
            assert str(port) in row["waiting"] and body["problem"] == row["waiting"]
            clusters.append(_scheduler(port))
            body, row = wait_for(client, second, "sklearn")
            assert row["status"] == "done", row["error"]
            assert body["problem"] is None
    finally:
        for cluster in clusters:
            cluster.close()


def test_a_job_that_ends_while_the_disk_is_full_is_recorded_once_it_is_not(settings, quick_retries):
    """The store refuses every write from the moment the job is claimed (a full disk, as SQLite
    reports it): the job's end is kept, the row says so, and it is written when space returns."""
    settings.comparisons, settings.comparison_runners = "on", "sklearn"
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        store, full = client.app.state.store, threading.Event()
        write = store.write

        async def full_after_a_claim(fn):
            if full.is_set():
                raise StoreUnavailable("the disk is full (database or disk is full)")
            result = await write(fn)
            if isinstance(result, comparisons.Claimed):
                full.set()  # the disk fills while the job runs
            return result

        store.write = full_after_a_claim
        run_id = post(client, forest_job("iris"), metrics={"accuracy": 0.9})
        queue = client.app.state.comparisons
        while not queue.ends.kept:
            threading.Event().wait(0.1)
        body, row = wait_for(client, run_id, "sklearn", {"running"})
        assert "ended (done)" in row["waiting"] and "disk is full" in row["waiting"]
        r = client.post("/api/runs", json={"id": "8d0a2f4e-1b7c-4c1e-9a51-2c1d5e6f7a8b",
                                           "kind": "selftest"})
        assert r.status_code == 503  # the disk is full for everyone
        cleared = comparisons.table.now()
        full.clear()  # space again: the kept end is written by the retry, nothing is lost
        body, row = wait_for(client, run_id, "sklearn")
        assert row["status"] == "done" and row["metrics"]["accuracy"] > 0.8
        assert row["finished_at"] < cleared  # when the job ended, not when it was written
        assert row["waiting"] is None and not queue.ends.kept


def test_a_kept_end_is_bounded_and_its_row_says_what_was_lost(settings, monkeypatch):
    """Past UNRECORDED_BYTES of kept results, a result is dropped and its row failed, naming why."""
    monkeypatch.setattr(job_ends, "UNRECORDED_BYTES", 100)
    settings.comparisons = "off"  # the row is made here, as a claim makes it
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        run_id = post(client, forest_job("iris"))
        store = client.app.state.store
        cid = store.write_sync(lambda conn: conn.execute(
            "INSERT INTO comparisons (run_id, runner, status, device, created_at, started_at) "
            "VALUES (?, 'sklearn', 'running', 'cpu', '2026-01-01T00:00:00Z', "
            "'2026-01-01T00:00:01Z')", (run_id,)).lastrowid)
        ends, full, write = job_ends.JobEnds(store, comparisons.table.finish), threading.Event(), store.write

        async def refuse_while_full(fn):
            if full.is_set():
                raise StoreUnavailable("the database is read-only (attempt to write a readonly "
                                       "database)")
            return await write(fn)

        store.write = refuse_while_full
        full.set()
        out = {"status": "done", "result": {"metrics": {"mse": 1.0}, "notes": ["x" * 200]}}
        client.portal.call(ends.record, cid, out)
        assert "read-only" in ends.why(cid)
        full.clear()
        client.portal.call(ends.close)
        row = store.read_sync(lambda conn: conn.execute(
            "SELECT status, error, result FROM comparisons WHERE id = ?", (cid,)).fetchone())
    assert row["status"] == "failed" and row["result"] is None
    assert "ended (done)" in row["error"] and "read-only" in row["error"]
    assert "run it again" in row["error"] and ends.why(cid) is None


def test_a_local_script_full_queue_leaves_the_page_its_share(settings, quick_retries):
    """Issue 31: the per-client share was per address, so a script's 50 jobs made the page's own
    post (same 127.0.0.1) answer 429. The page's tab id makes it another client; ids a script
    makes up are all bounded by the server's queue limit. (Jobs stay queued: no scheduler.)"""
    settings.comparisons, settings.comparison_runners = "on", "sklearn"
    settings.cluster = f"tcp://127.0.0.1:{free_port()}"
    settings.client_queue_limit, settings.queue_limit = 2, 4
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        def run():
            return {"id": str(uuid.uuid4()), "kind": "random_forest", "config": forest_job()}

        assert [client.post("/api/runs", json=run()).status_code for _ in range(3)] == [201, 201, 429]
        tab = {"X-Playground-Client": str(uuid.uuid4())}
        assert client.post("/api/runs", json=run(), headers=tab).status_code == 201
        # A script that makes up a tab id for each post gets the rest of the server's queue, no more.
        codes = [client.post("/api/runs", json=run(), headers={"X-Playground-Client": uuid.uuid4().hex})
                 .status_code for _ in range(2)]
        assert codes == [201, 429]
        r = client.post("/api/runs", json=run(), headers=tab)
        assert r.status_code == 429 and "--queue-limit" in r.json()["error"]["message"]
