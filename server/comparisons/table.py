"""The comparisons table: its schema and every transaction on it, one function each (most return
the function the store's writer thread runs: `await store.write(claim(device))`). One row per run
and runner; the table, not the cluster, is the source of truth (see server/comparisons/__init__.py).
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone

SCHEMA = """
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- also the queue order
    run_id TEXT NOT NULL REFERENCES runs (id),
    runner TEXT NOT NULL,                  -- server/runners: sklearn, xgboost, ...
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'unavailable')),
    error TEXT,                            -- why it failed or is unavailable
    result TEXT,                           -- JSON: the runner's result, when done
    device TEXT,                           -- the server's device when it was queued or started
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    client TEXT,                           -- who queued it (client_of), for the per-client limit
    cost REAL,                             -- the estimate of server/jobcost.py
    UNIQUE (run_id, runner)
);
CREATE INDEX IF NOT EXISTS comparisons_status ON comparisons (status, id)
"""

DIED = ("the server stopped during this job (or before the store could record its end: a full "
        "disk, a read-only file)")
CANCELLED = "cancelled"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class Claimed:
    id: int
    run_id: str
    runner: str
    job: dict


def add_columns(conn: sqlite3.Connection) -> None:
    """Columns added since the table was first made (stores from before the job limits)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(comparisons)")}
    for column, kind in (("client", "TEXT"), ("cost", "REAL")):
        if column not in have:
            conn.execute(f"ALTER TABLE comparisons ADD COLUMN {column} {kind}")


def insert(rows):
    def fn(conn: sqlite3.Connection) -> None:
        stamp = now()
        conn.executemany(
            "INSERT OR IGNORE INTO comparisons (run_id, runner, status, error, device, client, "
            "cost, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(*row, stamp) for row in rows])
        # A re-queue (POST): rows that exist and are neither queued nor running start over.
        for run_id, runner, status, error, device, client, cost in rows:
            conn.execute(
                "UPDATE comparisons SET status = ?, error = ?, device = ?, client = ?, cost = ?, "
                "result = NULL, created_at = ?, started_at = NULL, finished_at = NULL "
                "WHERE run_id = ? AND runner = ? AND status NOT IN ('queued', 'running')",
                (status, error, device, client, cost, stamp, run_id, runner))
    return fn


def any_queued(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM comparisons WHERE status = 'queued' LIMIT 1").fetchone() \
        is not None


def load(client: str):
    """(the client's jobs queued or running, everyone's, mean seconds of the last 20 jobs)."""
    def fn(conn: sqlite3.Connection):
        mine = conn.execute("SELECT COUNT(*) FROM comparisons WHERE status IN ('queued', "
                            "'running') AND client = ?", (client,)).fetchone()[0]
        total = conn.execute("SELECT COUNT(*) FROM comparisons WHERE status IN ('queued', "
                             "'running')").fetchone()[0]
        times = [r[0] for r in conn.execute(
            "SELECT (julianday(finished_at) - julianday(started_at)) * 86400 FROM comparisons "
            "WHERE status = 'done' AND started_at IS NOT NULL ORDER BY id DESC LIMIT 20")
            if r[0] is not None]
        return mine, total, (sum(times) / len(times) if times else 30.0)
    return fn


def cancel(run_id: str):
    def fn(conn: sqlite3.Connection) -> list[int]:
        running = [r[0] for r in conn.execute(
            "SELECT id FROM comparisons WHERE run_id = ? AND status = 'running'", (run_id,))]
        conn.execute("UPDATE comparisons SET status = 'failed', error = ?, finished_at = ? "
                     "WHERE run_id = ? AND status IN ('queued', 'running')",
                     (CANCELLED, now(), run_id))
        return running
    return fn


def claim(device: str):
    def fn(conn: sqlite3.Connection) -> Claimed | None:
        row = conn.execute(
            "SELECT c.id, c.run_id, c.runner, r.body FROM comparisons c JOIN runs r ON "
            "r.id = c.run_id WHERE c.status = 'queued' ORDER BY c.id LIMIT 1").fetchone()
        if row is None:
            return None
        conn.execute("UPDATE comparisons SET status = 'running', started_at = ?, device = ? "
                     "WHERE id = ?", (now(), device, row["id"]))
        return Claimed(row["id"], row["run_id"], row["runner"], json.loads(row["body"])["config"])
    return fn


def finish(comparison_id: int, out: dict, ended: str):
    result = out.get("result")
    if result is not None and out.get("worker"):
        result = {**result, "worker": out["worker"]}
    text = None if result is None else json.dumps(result, ensure_ascii=False, allow_nan=False)

    def fn(conn: sqlite3.Connection) -> None:
        # Only a row still running takes the answer: a cancelled one keeps "cancelled", and a
        # task that Dask ran twice (its first worker lost late) is written once.
        conn.execute("UPDATE comparisons SET status = ?, error = ?, result = ?, finished_at = ? "
                     "WHERE id = ? AND status = 'running'",
                     (out["status"], out.get("error"), text, ended, comparison_id))
    return fn


def fail_running(conn: sqlite3.Connection) -> int:
    return conn.execute("UPDATE comparisons SET status = 'failed', error = ?, finished_at = ? "
                        "WHERE status = 'running'", (DIED, now())).rowcount


def requeue(ids: list[int]):
    def fn(conn: sqlite3.Connection) -> None:
        conn.executemany("UPDATE comparisons SET status = 'queued', started_at = NULL "
                         "WHERE id = ? AND status = 'running'", [(i,) for i in ids])
    return fn
