"""The SQLite store: WAL, one writer, commits before acknowledging, 503 when the disk refuses."""

import asyncio
import sqlite3
import threading
import time
import uuid

import pytest

from server.store import Store, StoreUnavailable

SCHEMA = "CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "db" / "test.sqlite3")
    store.add_schema(SCHEMA)
    store.open()
    yield store
    store.close()


def insert(v):
    return lambda conn: conn.execute("INSERT INTO items (v) VALUES (?)", (v,)).lastrowid


def count(conn):
    return conn.execute("SELECT count(*) FROM items").fetchone()[0]


def test_wal_and_schema(store):
    mode = store.read_sync(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0])
    assert mode == "wal"
    assert store.read_sync(count) == 0


def test_async_write_is_committed_before_it_returns(store):
    async def main():
        row_id = await store.write(insert("a"))
        # A separate connection sees it: the transaction committed.
        with sqlite3.connect(store.path) as other:
            assert other.execute("SELECT v FROM items WHERE id = ?", (row_id,)).fetchone() == ("a",)
        return await store.read(count)

    assert asyncio.run(main()) == 1


def test_failing_write_rolls_back_and_the_writer_goes_on(store):
    def half_then_fail(conn):
        conn.execute("INSERT INTO items (v) VALUES ('half')")
        raise ValueError("caller's bug")

    with pytest.raises(ValueError):
        store.write_sync(half_then_fail)
    with pytest.raises(sqlite3.IntegrityError):  # not a store outage: no StoreUnavailable
        store.write_sync(lambda c: c.execute("INSERT INTO items (v) VALUES (NULL)"))
    store.write_sync(insert("b"))
    assert store.read_sync(lambda c: [r["v"] for r in c.execute("SELECT v FROM items")]) == ["b"]


def test_write_sync_from_inside_a_write_fails_loudly(store):
    with pytest.raises(RuntimeError, match="wait on itself"):
        store.write_sync(lambda c: store.write_sync(insert("x")))


def test_readers_cannot_write(store):
    with pytest.raises(StoreUnavailable, match="read-only"):
        store.read_sync(lambda c: c.execute("INSERT INTO items (v) VALUES ('r')"))


def test_many_threads_write_and_read_without_locking_errors(store):
    errors = []

    def worker():
        try:
            for i in range(50):
                store.write_sync(insert(str(i)))
                store.read_sync(count)
        except Exception as exc:  # collected: an exception in a thread would go unseen
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and store.read_sync(count) == 400


def test_close_finishes_queued_writes(tmp_path):
    store = Store(tmp_path / "q.sqlite3")
    store.add_schema(SCHEMA)
    store.open()
    futures = [store._submit(insert(str(i))) for i in range(100)]
    store.close()
    assert all(f.done() and not f.exception() for f in futures)
    with sqlite3.connect(tmp_path / "q.sqlite3") as conn:
        assert count(conn) == 100
    with pytest.raises(StoreUnavailable):
        store.write_sync(insert("late"))
    with pytest.raises(StoreUnavailable):
        store.read_sync(count)


def test_close_while_threads_read_leaves_their_queries_whole(tmp_path):
    """close() under running reads (a server shutting down while requests are served): every
    read finishes or is refused with StoreUnavailable, nothing else; the process never crashes
    (closing a connection another thread was querying segfaulted a test worker, and this test
    11 times in 12 before the fix) and no reader connection is left open."""
    store = Store(tmp_path / "close.sqlite3")
    store.add_schema(SCHEMA)
    store.open()
    store.write_sync(lambda c: c.executemany("INSERT INTO items (v) VALUES (?)", [(str(i),) for i in range(200)]))
    join = "SELECT count(*) FROM items a, items b WHERE a.id % 7 = b.id % 5"  # some ms a query
    ends, start = [], threading.Barrier(9)

    def reader():
        start.wait()
        try:
            while True:
                assert store.read_sync(lambda c: c.execute(join).fetchone()[0]) == 5760
        except StoreUnavailable:
            ends.append("closed")
        except BaseException as exc:  # anything else is the bug this test is for
            ends.append(repr(exc))

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    start.wait()
    time.sleep(0.3)  # the readers at full speed
    store.close()
    for t in threads:
        t.join(30)
    assert ends == ["closed"] * 8
    assert store._all_readers == []


def test_add_schema_after_open_is_an_error(store):
    with pytest.raises(RuntimeError):
        store.add_schema("CREATE TABLE t (x)")


def test_disk_full_is_store_unavailable(store):
    # max_page_count caps the file: SQLite answers SQLITE_FULL exactly as for a full disk.
    store.write_sync(lambda c: c.execute("PRAGMA max_page_count = 8"))
    with pytest.raises(StoreUnavailable, match="disk is full"):
        store.write_sync(insert("x" * 100_000))


def test_disk_full_and_read_only_answer_503(client):
    store = client.app.state.store
    run = {"id": str(uuid.uuid4()), "kind": "selftest", "metrics": {"blob": "x" * 200_000}}
    store.write_sync(lambda c: c.execute("PRAGMA max_page_count = 12"))
    r = client.post("/api/runs", json=run)
    assert r.status_code == 503 and "disk is full" in r.json()["error"]["message"]
    assert r.headers["retry-after"]

    store.write_sync(lambda c: c.execute("PRAGMA max_page_count = 1000000"))
    # query_only makes every write fail with SQLITE_READONLY, as a read-only mount does.
    store.write_sync(lambda c: c.execute("PRAGMA query_only = 1"))
    r = client.post("/api/runs", json={**run, "metrics": {}})
    assert r.status_code == 503 and "read-only" in r.json()["error"]["message"]
    assert client.get("/api/runs").status_code == 200  # reads still work
