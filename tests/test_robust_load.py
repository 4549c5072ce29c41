"""Load and crashes, against the real server in its own process: 50 clients posting 100 runs each
store exactly 5,000; a SIGKILL in the middle of a storm of posts loses no acknowledged run and
leaves a sound database; a full or read-only database answers 503 and recovers by itself.

(20 x 50 posts with retries through an in-process uvicorn are in test_server_live.py.)
"""

import http.client
import json
import socket
import sqlite3
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from robust_server import CliServer

CLIENTS, POSTS = 50, 100


def post_run(conn: http.client.HTTPConnection, run_id: str) -> tuple[int, str]:
    conn.request("POST", "/api/runs", body=json.dumps({"id": run_id, "kind": "selftest"}),
                 headers={"content-type": "application/json"})
    r = conn.getresponse()
    return r.status, r.read().decode()


def storm(port: int, clients: int, posts: int | None, acked: list, errors: list,
          stop: threading.Event | None = None) -> list[threading.Thread]:
    """`clients` threads, one keep-alive connection each (http.client: the lightest client, so
    the server, not the test, is what is measured), posting runs until `posts` or `stop`."""

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        n = 0
        while (posts is None or n < posts) and not (stop and stop.is_set()):
            run_id = str(uuid.uuid4())
            try:
                status, text = post_run(conn, run_id)
            except (OSError, http.client.HTTPException) as exc:
                if stop is None:
                    errors.append(repr(exc))
                return  # the server is gone (killed): an unanswered post is not acknowledged
            if status in (200, 201):
                acked.append(run_id)
            else:
                errors.append(f"{status} {text}")
            n += 1
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    return threads


def stored_ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM runs")]


@pytest.fixture
def fast_dir(tmp_path):
    """A data dir in memory (/dev/shm) where there is one: each commit is an fsync, 4 ms on this
    disk, and 5,000 of them one after another would take the test past its budget."""
    if not Path("/dev/shm").is_dir():
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        yield Path(d)


def test_50_clients_post_100_runs_each(fast_dir):
    acked, errors = [], []
    with CliServer(fast_dir / "data") as server:
        t0 = time.monotonic()
        for t in storm(server.port, CLIENTS, POSTS, acked, errors):
            t.join()
        elapsed = time.monotonic() - t0
        log = server.output()
    assert errors == []
    assert len(acked) == CLIENTS * POSTS == len(set(acked))
    ids = stored_ids(fast_dir / "data" / "playground.sqlite3")
    assert len(ids) == CLIENTS * POSTS and set(ids) == set(acked)
    assert "locked" not in log and "Traceback" not in log
    print(f"{CLIENTS * POSTS} posts in {elapsed:.1f} s")


def test_sigkill_during_a_storm_loses_no_acknowledged_run(tmp_path):
    """On the real disk: what was acknowledged had committed (synchronous=FULL), so it is there
    after the process dies without a shutdown; what was in flight may or may not be."""
    data = tmp_path / "data"
    acked, errors, stop = [], [], threading.Event()
    server = CliServer(data)
    try:
        threads = storm(server.port, 20, None, acked, errors, stop)
        deadline = time.monotonic() + 20
        while len(acked) < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()  # mid-storm: 20 posts are in flight
        stop.set()
        for t in threads:
            t.join()
    finally:
        server.stop()
    assert errors == [] and len(acked) >= 300
    with CliServer(data) as again:  # the same data dir: recovery from the WAL
        conn = http.client.HTTPConnection("127.0.0.1", again.port, timeout=30)
        status, _ = post_run(conn, str(uuid.uuid4()))
        assert status == 201  # writable after the crash
        conn.close()
        db = data / "playground.sqlite3"
        with sqlite3.connect(db) as check:
            assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        ids = stored_ids(db)
    assert set(acked) <= set(ids), f"{len(set(acked) - set(ids))} acknowledged runs lost"
    assert len(ids) == len(set(ids)) <= len(acked) + 20 + 1  # plus the in-flight ones, at most


def test_sigkill_mid_upload_leaves_nothing_after_restart(tmp_path):
    """A crash mid-upload leaves a temp file (nothing can remove it then); the next start does."""
    data = tmp_path / "data"
    server = CliServer(data)
    sockets = []
    try:
        for path, name in (("/api/datasets", "a.csv"), ("/api/texts", "a.txt")):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            head = (f'--B\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                    "\r\n").encode()
            s.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n"
                       "Content-Type: multipart/form-data; boundary=B\r\n\r\n").encode()
                      + head + b"a,b\n" + b"1,2\n" * 20_000)
            sockets.append(s)
        deadline = time.monotonic() + 10
        while len(list((data / "uploads").glob("*.part"))) < 2:
            assert time.monotonic() < deadline, list((data / "uploads").iterdir())
            time.sleep(0.01)
        server.kill()
    finally:
        for s in sockets:
            s.close()
        server.stop()
    assert len(list((data / "uploads").glob("*.part"))) == 2  # what the crash left
    with CliServer(data) as again:
        assert list((data / "uploads").iterdir()) == []
        for path in ("/api/datasets", "/api/texts"):  # and nothing half-stored was recorded
            listed = next(iter(httpx.get(again.url + path, timeout=30).json().values()))
            assert all(d["builtin"] for d in listed)


def test_full_and_read_only_database_recover_by_themselves(client):
    """503 while the disk is full or the database read-only; the same post succeeds once space
    (or write access) returns, with no restart."""
    store = client.app.state.store
    run = {"id": str(uuid.uuid4()), "kind": "selftest", "metrics": {"blob": "x" * 200_000}}
    pages = store.read_sync(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
    store.write_sync(lambda c: c.execute(f"PRAGMA max_page_count = {pages + 2}"))  # "disk full"
    r = client.post("/api/runs", json=run)
    assert r.status_code == 503 and "disk is full" in r.json()["error"]["message"]
    assert client.get(f"/api/runs/{run['id']}").status_code == 404  # nothing half-written
    store.write_sync(lambda c: c.execute("PRAGMA max_page_count = 1073741823"))  # space returns
    assert client.post("/api/runs", json=run).status_code == 201

    # query_only refuses every write with SQLITE_READONLY, as a read-only mount does. Once set,
    # the writer's own transactions fail too, so it is lifted on the connection kept here (the
    # writer thread is idle meanwhile).
    writer = store.write_sync(lambda c: (c.execute("PRAGMA query_only = 1"), c)[1])
    other = {**run, "id": str(uuid.uuid4())}
    assert client.post("/api/runs", json=other).status_code == 503
    assert client.post("/api/datasets", files={"file": ("a.csv", b"a,b\n1,2\n")}).status_code == 503
    assert client.get("/api/runs").status_code == 200  # reads go on
    writer.execute("PRAGMA query_only = 0")  # remounted read-write
    assert client.post("/api/runs", json=other).status_code == 201
    assert client.get(f"/api/runs/{other['id']}").json()["metrics"] == run["metrics"]
