"""Comparisons: the job behind each posted run, run again by the server's runners, side by side.

    GET  /api/runs/{id}/comparisons   {"run", "kind", "device", "enabled", "browser": {...},
                                       "comparisons": [{runner, status, device, hardware,
                                       versions, timings, metrics, error, speedup, agreement,
                                       created_at, started_at, finished_at}, ...]}; 404 for an
                                       unknown run
    POST /api/runs/{id}/comparisons   queue the run's runners again (those not queued or running
                                       now; {"runners": [...]} to pick); 202 with the GET answer

Life of a comparison (table `comparisons`, one row per run and runner):
    queued -> running -> done | failed         the job ran (failed: its error, or its worker died)
    unavailable                                the runner cannot run here, and says why
A new random_forest or transformer run gets one row per runner of its kind (server/runners).
Jobs run outside the event loop in a pool of worker processes (spawned, `comparison_workers` of
them, default 1), oldest first; every status change is a committed write.

Restarts: a row still `running` at start-up belonged to a server that died mid-job; it is marked
failed ("the server stopped during this job") rather than re-run, because the job may be what
killed it (out of memory, a GPU driver fault) and would do so again on every start. POST above
re-queues it by hand. `queued` rows are resumed. A clean shutdown (Ctrl-C) kills the running jobs'
workers and puts those rows back to `queued`, so they resume on the next start.

Settings (attributes of server.settings.Settings, else PLAYGROUND_* environment variables):
`comparisons` "on" | "off" (off: nothing is queued; tests that do not want jobs use it) and
`comparison_workers` (processes, default 1: each job may itself use every core or the GPU) and
`comparison_runners` (a comma-separated list; the others show as unavailable, "turned off").
"""
from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import sqlite3
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server.errors import ClientError
from server.jsonbody import read_json
from server.runners import RUNNERS, execute, runners_for, worker_init
from server.runs import UUID_RE

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- also the queue order
    run_id TEXT NOT NULL REFERENCES runs (id),
    runner TEXT NOT NULL,                  -- server/runners: sklearn, cuml, py_core-native, ...
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'unavailable')),
    error TEXT,                            -- why it failed or is unavailable
    result TEXT,                           -- JSON: the runner's result, when done
    device TEXT,                           -- the server's device when it was queued or started
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    UNIQUE (run_id, runner)
);
CREATE INDEX IF NOT EXISTS comparisons_status ON comparisons (status, id)
"""

DIED = "the server stopped during this job"
WORKER_DIED = ("the worker process running this job died (killed, or out of memory); "
               "POST /api/runs/{id}/comparisons queues it again")
SPEED_TIMING = {"random_forest": "fit", "transformer": "step"}  # what `speedup` compares


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def setting(settings, name: str, default: str) -> str:
    value = getattr(settings, name, None)
    return str(value if value is not None else os.environ.get(f"PLAYGROUND_{name.upper()}", default))


def enabled(settings) -> bool:
    value = setting(settings, "comparisons", "on").lower()
    if value not in ("on", "off", "true", "false", "1", "0"):
        raise ValueError(f"comparisons must be 'on' or 'off', not {value!r}")
    return value in ("on", "true", "1")


def job_problem(run: dict) -> str | None:
    """Why the run's config is not a job the server can run again, or None."""
    job = run.get("config")
    if not isinstance(job, dict) or job.get("kind") != run["kind"]:
        return "the run's config is not its job (expected {\"kind\": \"%s\", ...})" % run["kind"]
    needs = {"random_forest": ("dataset", "target"), "transformer": ("text",)}.get(run["kind"], ())
    missing = [key for key in needs if not isinstance(job.get(key), str) or not job[key]]
    if missing:
        return f"the run's job has no {' or '.join(repr(k) for k in missing)}: nothing to rerun"
    return None


@dataclass
class Claimed:
    id: int
    run_id: str
    runner: str
    job: dict


class Queue:
    """The comparison jobs of one server: rows in the store, a pool of worker processes."""

    def __init__(self, store, data_dir, device: str, workers: int = 1,
                 runners: list[str] | None = None):
        if workers < 1:
            raise ValueError(f"comparison_workers must be at least 1, not {workers}")
        unknown = set(runners or ()) - set(RUNNERS)
        if unknown:
            raise ValueError(f"comparison_runners: no runner {sorted(unknown)}; the runners are "
                             f"{', '.join(RUNNERS)}")
        self.store, self.data_dir, self.device, self.workers = store, str(data_dir), device, workers
        self.runners = runners  # None: all of them
        self._wake = asyncio.Event()
        self._inflight: dict[int, asyncio.Task] = {}
        self._pool: ProcessPoolExecutor | None = None
        self._loop_task: asyncio.Task | None = None

    # -- life cycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        failed = await self.store.write(_fail_running)
        if failed:
            log.warning("%d comparison(s) were running when the server stopped: marked failed",
                        failed)
        self._loop_task = asyncio.create_task(self._dispatch(), name="comparisons")
        self._wake.set()  # resume what is queued

    async def stop(self) -> None:
        """Stop dispatching, kill running jobs' workers, put their rows back in the queue."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        running, tasks = list(self._inflight), list(self._inflight.values())
        for task in tasks:  # first, so that no task records its dying worker as a failure
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        pool, self._pool = self._pool, None
        if pool is not None:
            await anyio.to_thread.run_sync(_kill, pool)
        if running:
            await self.store.write(_requeue(running))
            log.info("comparison(s) %s interrupted by shutdown: queued again", running)

    # -- queueing -------------------------------------------------------------------------------
    async def enqueue(self, run: dict, runners: list[str] | None = None) -> None:
        """on_run_stored callback: one row per runner of the run's kind."""
        chosen = [r for r in runners_for(run["kind"]) if runners is None or r.name in runners]
        if not chosen:
            return
        problem = job_problem(run)
        rows = []
        for r in chosen:
            off = self.runners is not None and r.name not in self.runners
            reason = problem or ("turned off on this server (comparison_runners)" if off
                                 else r.check(self.device))
            status = "failed" if problem else "unavailable" if reason else "queued"
            rows.append((run["id"], r.name, status, reason, self.device))
        await self.store.write(_insert(rows))
        self._wake.set()

    # -- dispatching ----------------------------------------------------------------------------
    async def _dispatch(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while len(self._inflight) < self.workers:
                claimed = await self.store.write(_claim(self.device))
                if claimed is None:
                    break
                self._inflight[claimed.id] = asyncio.create_task(self._run(claimed))

    async def _run(self, job: Claimed) -> None:
        try:
            pool = self._get_pool()
            try:
                out = await asyncio.get_running_loop().run_in_executor(
                    pool, execute, job.runner, job.job, self.data_dir, self.device)
            except BrokenProcessPool:
                self._drop_pool(pool)
                out = {"status": "failed", "error": WORKER_DIED.format(id=job.run_id)}
            except Exception as exc:  # the job could not be sent (pickling), the pool is gone
                out = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
            if out.get("traceback"):
                log.warning("comparison %s (%s) failed:\n%s", job.id, job.runner, out["traceback"])
            await self.store.write(_finish(job.id, out))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("comparison %s (%s): could not record its end", job.id, job.runner)
        finally:
            self._inflight.pop(job.id, None)
            self._wake.set()

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: a fresh interpreter, no copy of the server's threads, sockets and locks
            # (fork would copy them mid-flight), and CUDA initialises cleanly in the child.
            self._pool = ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"),
                                             initializer=worker_init, initargs=(os.getpid(),))
        return self._pool

    def _drop_pool(self, pool) -> None:
        if self._pool is pool:  # a broken pool takes every job in it down; start a new one
            self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)


def _kill(pool: ProcessPoolExecutor) -> None:
    # SIGKILL: a job may sit in native code (BLAS, CUDA) for minutes and not hear SIGTERM soon.
    kill_workers = getattr(pool, "kill_workers", None)  # Python 3.14
    if kill_workers is not None:
        kill_workers()
    else:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.kill()
    pool.shutdown(wait=True, cancel_futures=True)


# -- store transactions -----------------------------------------------------------------------

def _insert(rows):
    def fn(conn: sqlite3.Connection) -> None:
        now = _now()
        conn.executemany(
            "INSERT OR IGNORE INTO comparisons (run_id, runner, status, error, device, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)", [(*row, now) for row in rows])
        # A re-queue (POST): rows that exist and are neither queued nor running start over.
        for run_id, runner, status, error, device in rows:
            conn.execute(
                "UPDATE comparisons SET status = ?, error = ?, device = ?, result = NULL, "
                "created_at = ?, started_at = NULL, finished_at = NULL "
                "WHERE run_id = ? AND runner = ? AND status NOT IN ('queued', 'running')",
                (status, error, device, now, run_id, runner))
    return fn


def _claim(device: str):
    def fn(conn: sqlite3.Connection) -> Claimed | None:
        row = conn.execute(
            "SELECT c.id, c.run_id, c.runner, r.body FROM comparisons c JOIN runs r ON "
            "r.id = c.run_id WHERE c.status = 'queued' ORDER BY c.id LIMIT 1").fetchone()
        if row is None:
            return None
        conn.execute("UPDATE comparisons SET status = 'running', started_at = ?, device = ? "
                     "WHERE id = ?", (_now(), device, row["id"]))
        return Claimed(row["id"], row["run_id"], row["runner"], json.loads(row["body"])["config"])
    return fn


def _finish(comparison_id: int, out: dict):
    result = out.get("result")
    text = None if result is None else json.dumps(result, ensure_ascii=False, allow_nan=False)

    def fn(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE comparisons SET status = ?, error = ?, result = ?, finished_at = ? "
                     "WHERE id = ?", (out["status"], out.get("error"), text, _now(), comparison_id))
    return fn


def _fail_running(conn: sqlite3.Connection) -> int:
    return conn.execute("UPDATE comparisons SET status = 'failed', error = ?, finished_at = ? "
                        "WHERE status = 'running'", (DIED, _now())).rowcount


def _requeue(ids: list[int]):
    def fn(conn: sqlite3.Connection) -> None:
        conn.executemany("UPDATE comparisons SET status = 'queued', started_at = NULL "
                         "WHERE id = ? AND status = 'running'", [(i,) for i in ids])
    return fn


# -- the API ----------------------------------------------------------------------------------

def speedup(kind: str, browser_timings: dict, timings: dict) -> float | None:
    """Browser time / runner time for the kind's main timing: above 1, the server was faster."""
    key = SPEED_TIMING.get(kind)
    b, s = (browser_timings or {}).get(key), (timings or {}).get(key)
    if not isinstance(b, (int, float)) or not isinstance(s, (int, float)) or b <= 0 or s <= 0:
        return None
    return b / s


def agreement(kind: str, runner: str, browser: dict, server: dict) -> dict | None:
    """Whether the browser's model is as good as the runner's, by the tolerance of the issue that
    made the model. Same algorithm (py_core-*): the same forest, so MSE to 1e-4 relative and the
    same accuracy. Other forests (sklearn, cuml): the browser's MSE at most 2% above theirs, its
    accuracy at most 1 point below. Transformer: validation loss within 2%."""
    same = runner.startswith("py_core")
    for metric, relative, lower_is_better, tol in (
            ("mse", True, True, 1e-4 if same else 0.02),
            ("accuracy", False, False, 1e-9 if same else 0.01),
            ("val_loss", True, True, 0.02)):
        b, s = (browser or {}).get(metric), (server or {}).get(metric)
        if not isinstance(b, (int, float)) or not isinstance(s, (int, float)):
            continue
        diff = b - s
        if relative:
            diff = diff / abs(s) if s else (0.0 if b == s else float("inf"))
        excess = abs(diff) if same or kind == "transformer" else (diff if lower_is_better else -diff)
        return {"metric": metric, "browser": b, "server": s, "difference": diff,
                "relative": relative, "tolerance": tol, "within": excess <= tol}
    return None


def _present(kind: str, browser: dict, row: sqlite3.Row) -> dict:
    result = json.loads(row["result"]) if row["result"] else {}
    out = {"runner": row["runner"], "status": row["status"], "device": row["device"],
           "hardware": None, "versions": {}, "timings": {}, "metrics": {}, "error": row["error"]}
    out.update({k: v for k, v in result.items() if k != "runner"})
    out["speedup"] = speedup(kind, browser.get("timings"), out["timings"])
    out["agreement"] = agreement(kind, row["runner"], browser.get("metrics"), out["metrics"])
    out.update(created_at=row["created_at"], started_at=row["started_at"],
               finished_at=row["finished_at"])
    return out


async def _answer(request: Request, run_id: str, status: int = 200) -> JSONResponse:
    def fn(conn):
        run = conn.execute("SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone()
        rows = conn.execute("SELECT * FROM comparisons WHERE run_id = ?", (run_id,)).fetchall()
        return run, rows

    run, rows = await request.app.state.store.read(fn)
    if run is None:
        raise ClientError(404, "no run with this id", field="id")
    run = json.loads(run["body"])
    order = {name: i for i, name in enumerate(RUNNERS)}
    rows = sorted(rows, key=lambda r: (order.get(r["runner"], len(order)), r["runner"]))
    browser = {"backend": run.get("backend"), "adapter": run.get("adapter"),
               "timings": run.get("timings") or {},
               "metrics": {k: v for k, v in (run.get("metrics") or {}).items()
                           if not isinstance(v, (list, dict))}}  # curves stay in the run
    return JSONResponse({
        "run": run_id, "kind": run["kind"], "device": request.app.state.device,
        "enabled": getattr(request.app.state, "comparisons", None) is not None, "browser": browser,
        "comparisons": [_present(run["kind"], browser, r) for r in rows]}, status)


def _run_id(request: Request) -> str:
    run_id = request.path_params["id"]
    if not UUID_RE.match(run_id):
        raise ClientError(404, "no run with this id", field="id")
    return run_id.lower()


async def get_comparisons(request: Request) -> JSONResponse:
    return await _answer(request, _run_id(request))


async def post_comparisons(request: Request) -> JSONResponse:
    run_id = _run_id(request)
    queue: Queue | None = getattr(request.app.state, "comparisons", None)
    if queue is None:
        raise ClientError(409, "comparisons are off on this server (--comparisons off)")
    body = {}
    if request.headers.get("content-length", "0") != "0":
        body = await read_json(request, request.app.state.settings.max_json_bytes)
    runners = body.get("runners") if isinstance(body, dict) else None
    if runners is not None and (not isinstance(runners, list)
                                or not all(isinstance(r, str) and r in RUNNERS for r in runners)):
        raise ClientError(400, f"must be a list of runner names from {list(RUNNERS)}",
                          field="runners")
    row = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone())
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    await queue.enqueue(json.loads(row["body"]), runners)
    return await _answer(request, run_id, 202)


@asynccontextmanager
async def lifespan(app):
    settings = app.state.settings
    app.state.comparisons = None
    if not enabled(settings):
        yield
        return
    names = getattr(settings, "comparison_runners", None)
    if not isinstance(names, (list, tuple)):
        names = setting(settings, "comparison_runners", "").split(",")
    queue = Queue(app.state.store, settings.data_dir, app.state.device,
                  int(setting(settings, "comparison_workers", "1")),
                  [n.strip() for n in names if n.strip()] or None)
    await queue.start()
    app.state.comparisons = queue
    app.state.on_run_stored.append(queue.enqueue)
    try:
        yield
    finally:
        app.state.on_run_stored.remove(queue.enqueue)
        app.state.comparisons = None
        await queue.stop()


routes = [
    Route("/api/runs/{id}/comparisons", get_comparisons, methods=["GET"]),
    Route("/api/runs/{id}/comparisons", post_comparisons, methods=["POST"]),
]
