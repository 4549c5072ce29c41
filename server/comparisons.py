"""Comparisons: the job behind each posted run, run again by the server's runners, side by side.

    GET    /api/runs/{id}/comparisons  {"run", "kind", "device", "enabled", "browser": {...},
                                        "problem": why queued jobs wait, or null,
                                        "comparisons": [{runner, status, device, hardware,
                                        versions, timings, metrics, error, note, speedup,
                                        agreement, created_at, started_at, finished_at,
                                        waiting}, ...]}  (waiting: why a queued job has not
                                        started, or a running one's end is not stored yet)
    POST   /api/runs/{id}/comparisons  queue the run's runners again (those not queued or running
                                        now; {"runners": [...]} to pick); 202 with the GET answer;
                                        422 naming the cap a job is over, 429 + Retry-After when
                                        the client's or the server's queue is full
    DELETE /api/runs/{id}/comparisons  cancel the run's queued and running jobs (a running one's
                                        process is killed); 200 with the GET answer

Life of a comparison (table `comparisons`, one row per run and runner; the table, not the
cluster, is the source of truth):
    queued -> running -> done | failed         the job ran (failed: its error, its limit, or
                                               "cancelled")
    unavailable                                never queued: the runner cannot run here, or the
                                               job is over a cap; `error` says why

Where jobs run: a Dask `distributed` cluster. By default the server starts an embedded
`LocalCluster` (`comparison_workers` worker processes, one thread each: one job at a time a
worker, since a job may use every core or the GPU); `--cluster tcp://host:8786` uses an existing
scheduler instead, whose workers may sit on other machines (docs/deploy.md: "Comparisons on a cluster").
The server claims queued rows oldest first, as many as the cluster has worker threads, and
submits each as a task (server/runners/task.py) that runs the job in a child process under its
limits: `job_timeout_s` (wall clock) and `job_memory_mb` (resident memory), both enforced in the
worker. A job stopped by a limit or a cancel is failed with the reason and never re-queued.
A worker lost mid-job (killed, its machine gone) is retried by Dask on another worker, at most
`job_retries` times (the embedded scheduler's `allowed-failures`; an external scheduler's own
setting), then failed; the result is written once, by the server, when the task's future ends.

Before a job is queued its cost is estimated from its config (server/jobcost.py) and checked
against the caps, then against the queues: each client may have `client_queue_limit` jobs queued
or running, the server `queue_limit` in all. A client is its address and the tab id the page sends
(header X-Playground-Client), so a local script's jobs do not fill the local page's share; a
script may send ids of its own, and the server's limit bounds them all. Both routes that
queue jobs say the same about a job over a cap, the cap's name, the job's figure, the limit and
the flag that raises it (jobcost.OverCap):
    POST /api/runs                 the run is stored (it ran in the browser): 201, and each
                                   runner that would have run it is `unavailable` with that
                                   message (the others keep their own reason, "turned off", "no
                                   CUDA device"); such a run takes no room in the queues
    POST /api/runs/{id}/comparisons  422 with that message and the field, nothing changed
A full queue answers 429 with Retry-After on both, and POST /api/runs then stores nothing (the
page posts it again after that many seconds; the run's id makes the retry safe).

Outages: an unreachable scheduler (at start or later) is tried again with backoff
(server/cluster.py); meanwhile jobs stay queued, and GET says why they wait (`problem`, and each
queued row's `waiting`). A job whose end the store cannot take (a full disk, a read-only file)
keeps it in memory and records it, with the time it really ended, once the store takes writes
again (server/job_ends.py).

Restarts: a row still `running` at start-up belonged to a server that died mid-job; it is marked
failed ("the server stopped during this job") rather than re-run, because the job may be what
killed it. `queued` rows are resumed. A clean shutdown cancels the running tasks and puts those
rows back to `queued`, so they resume on the next start.

Settings (server.settings.Settings, flags, PLAYGROUND_* environment variables): comparisons
on|off, comparison_workers, comparison_runners, cluster, job_timeout_s, job_memory_mb,
job_retries, client_queue_limit, queue_limit, and the caps of server/jobcost.py.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import math
import os
import re
import sqlite3
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from py_core.jobs import kind as kind_of
from server import jobcost
from server.cluster import Cluster, backoff
from server.errors import ClientError
from server.job_ends import JobEnds
from server.jsonbody import read_json
from server.runners import RUNNERS, runners_for
from server.runs import UUID_RE
from server.settings import default_job_memory_mb
from server.store import StoreUnavailable

log = logging.getLogger(__name__)

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
WORKER_DIED = ("the worker running this job died {n} time(s) (killed, out of memory, its machine "
               "gone); POST /api/runs/{id}/comparisons queues it again")
CANCELLED = "cancelled"
LOST = ("the Dask scheduler went away during this job ({error}); POST /api/runs/{id}/comparisons "
        "queues it again")


@dataclass
class Limits:
    timeout_s: float = 1800.0    # a job's wall clock, enforced in the worker
    memory_mb: float = field(default_factory=default_job_memory_mb)  # resident, in the worker
    retries: int = 2             # a job whose worker died runs again at most this often
    client_queue: int = 50       # jobs queued or running for one client
    queue: int = 1000            # jobs queued or running in all
    caps: dict = field(default_factory=lambda: {k: v for k, (v, _) in jobcost.CAPS.items()})


class QueueFull(ClientError):
    def __init__(self, message: str, retry_after: int):
        super().__init__(429, message, field=None)
        self.headers = {"Retry-After": str(retry_after)}


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
    found = kind_of(run["kind"])
    needs = found.needs if found is not None else ()
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
    """The comparison jobs of one server: rows in the store, tasks on a Dask cluster."""

    def __init__(self, store, data_dir, device: str, workers: int = 1,
                 runners: list[str] | None = None, cluster: str | None = None,
                 limits: Limits | None = None):
        if workers < 1:
            raise ValueError(f"comparison_workers must be at least 1, not {workers}")
        unknown = set(runners or ()) - set(RUNNERS)
        if unknown:
            raise ValueError(f"comparison_runners: no runner {sorted(unknown)}; the runners are "
                             f"{', '.join(RUNNERS)}")
        self.store, self.data_dir, self.device, self.workers = store, str(data_dir), device, workers
        self.runners = runners  # None: all of them
        self.address, self.limits = cluster or None, limits or Limits()
        self.dask = Cluster(self.address, workers, self.limits.retries)
        self._wake = asyncio.Event()
        self._inflight: dict[int, asyncio.Task] = {}
        self._futures: dict[int, object] = {}
        self._cancelling: set[int] = set()
        # run id -> (client, estimate or OverCap), from POST /api/runs' check to its enqueue
        self._admitted: dict[str, tuple] = {}
        self._loop_task: asyncio.Task | None = None
        self.store_problem: str | None = None  # why a claim failed: the store refused it
        self.ends = JobEnds(store, _finish)  # job ends the store refused, kept until it takes them

    # -- life cycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        await self.store.write(_migrate)
        failed = await self.store.write(_fail_running)
        if failed:
            log.warning("%d comparison(s) were running when the server stopped: marked failed",
                        failed)
        self._loop_task = asyncio.create_task(self._dispatch(), name="comparisons")
        self._wake.set()  # resume what is queued

    @property
    def problem(self) -> str | None:
        """Why queued jobs wait (GET .../comparisons shows it), or None when nothing stops them."""
        return "; ".join(p for p in (self.dask.problem, self.store_problem) if p) or None

    @property
    def client(self):
        return self.dask.client

    def capacity(self) -> int:
        return self.dask.capacity

    async def stop(self) -> None:
        """Stop dispatching, cancel running tasks, put their rows back in the queue, write the
        job ends the store refused until now (once more: what still fails is logged)."""
        if self._loop_task is not None and self.dask.connecting and not self.address:
            deadline = asyncio.get_running_loop().time() + 120
            while self.dask.connecting and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)  # a cluster half started would leave its processes
            if self.dask.connecting:
                log.warning("comparisons: the Dask cluster did not start within 120 s")
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        running, tasks = list(self._inflight), list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            if running:
                await self.store.write(_requeue(running))
                log.info("comparison(s) %s interrupted by shutdown: queued again", running)
            await self.ends.close()
        except StoreUnavailable as exc:  # left `running`: the next start marks them failed
            log.error("comparisons: at shutdown the store refused %d job end(s): %s",
                      len(running) + len(self.ends.kept), exc)
        await self.dask.close(self._futures.values())

    # -- admission ------------------------------------------------------------------------------
    def check_caps(self, run: dict) -> dict:
        """The job's estimate; OverCap when it breaks a cap."""
        return jobcost.check(run.get("config"), self.data_dir, self.limits.caps)

    async def admit(self, run: dict) -> dict | jobcost.Refused | None:
        """The run's job against the caps: its estimate, the OverCap it breaks, or None for a
        run whose config is not a job (job_problem says why)."""
        if job_problem(run) is not None:
            return None
        try:
            return await asyncio.to_thread(self.check_caps, run)
        except jobcost.Refused as exc:
            return exc

    async def check_room(self, client: str, jobs: int) -> None:
        """QueueFull (429) when `jobs` more would take the client or the server past its limit."""
        if not jobs:
            return
        mine, total, avg = await self.store.read(_load(client))
        for count, limit, who in ((mine, self.limits.client_queue, "your"),
                                  (total, self.limits.queue, "the server's")):
            if limit and count + jobs > limit:
                per = max(1, self.capacity() or self.workers)
                wait = int(min(3600, max(1, math.ceil((count - limit + jobs) * avg / per))))
                raise QueueFull(f"{who} comparison queue is full ({count} job(s) queued or "
                                f"running, at most {limit}; --"
                                f"{'client-queue-limit' if who == 'your' else 'queue-limit'}); "
                                f"try again in {wait} s", wait)

    def queueable(self, run: dict, runners: list[str] | None = None) -> list:
        """The runners that would queue a job for this run (not turned off, able to run here)."""
        return [r for r in self.jobs_for(run, runners)
                if (self.runners is None or r.name in self.runners) and not r.check(self.device)]

    def jobs_for(self, run: dict, runners: list[str] | None = None) -> list:
        return [r for r in runners_for(run.get("kind")) if runners is None or r.name in runners]

    async def before_run_stored(self, run: dict, request: Request) -> None:
        """POST /api/runs, before the insert: a full queue refuses the post with 429 (a run over
        a cap queues nothing, so it is never refused for room)."""
        if not self.jobs_for(run):
            return
        exists = await self.store.read(lambda conn: conn.execute(
            "SELECT 1 FROM runs WHERE id = ?", (run["id"],)).fetchone())
        if exists:
            return
        client, admitted = client_of(request), await self.admit(run)
        if not isinstance(admitted, jobcost.Refused):
            await self.check_room(client, len(self.queueable(run)))
        self._admitted[run["id"]] = (client, admitted)

    # -- queueing -------------------------------------------------------------------------------
    async def enqueue(self, run: dict, runners: list[str] | None = None,
                      client: str | None = None, admitted=None) -> None:
        """One row per runner of the run's kind (on_run_stored callback: a run just stored).
        admitted: what `admit` said of the run, when the caller asked it already."""
        chosen = self.jobs_for(run, runners)
        client_then, admitted_then = self._admitted.pop(run["id"], (None, None))
        client = client or client_then or "-"
        if not chosen:
            return
        problem = job_problem(run)
        if problem is None and admitted is None:
            admitted = admitted_then if admitted_then is not None else await self.admit(run)
        over = str(admitted) if isinstance(admitted, jobcost.Refused) else None
        cost = admitted.get("cost") if isinstance(admitted, dict) else None
        rows = []
        for r in chosen:
            off = self.runners is not None and r.name not in self.runners
            reason = problem or ("turned off on this server (comparison_runners)" if off
                                 else r.check(self.device) or over)
            status = "failed" if problem else "unavailable" if reason else "queued"
            rows.append((run["id"], r.name, status, reason, self.device, client, cost))
        await self.store.write(_insert(rows))
        if any(row[2] == "queued" for row in rows):
            self._wake.set()

    async def cancel(self, run_id: str) -> int:
        """Cancel the run's queued and running jobs; how many there were."""
        running = await self.store.write(_cancel(run_id))
        for cid in running:
            self._cancelling.add(cid)
            fut = self._futures.get(cid)
            if fut is not None and self.client is not None:
                try:
                    await self.client.cancel([fut], force=True)
                except Exception:
                    log.warning("comparisons: cancelling task %s failed", cid, exc_info=True)
            task = self._inflight.get(cid)
            if task is not None:
                task.cancel()
        return len(running)

    # -- dispatching ----------------------------------------------------------------------------
    async def _dispatch(self) -> None:
        # The cluster starts with the first job to run, not with the server: a server whose
        # runs need no job (or the tests that post none) starts no processes.
        while not await self.store.read(_any_queued):
            await self._wake.wait()
            self._wake.clear()
        while True:
            if not self.dask.connected():
                await self.dask.close(self._futures.values())
                if not await self.dask.try_connect():
                    await asyncio.sleep(backoff(self.dask.attempts))
                    continue
            try:
                await asyncio.wait_for(self._wake.wait(), 1.0)  # workers come and go
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            await self.dask.refresh()
            try:
                while len(self._inflight) < self.capacity():
                    claimed = await self.store.write(_claim(self.device))
                    if claimed is None:
                        break
                    self._inflight[claimed.id] = asyncio.create_task(self._run(claimed))
            except StoreUnavailable as exc:  # tried again within a second
                if self.store_problem is None:
                    log.warning("comparisons: the store refuses to start jobs: %s", exc)
                self.store_problem = f"the store cannot be written ({exc}); queued jobs wait"
            else:
                self.store_problem = None

    async def _run(self, job: Claimed) -> None:
        from distributed import KilledWorker

        from server.runners.task import run_comparison
        cid = job.id
        try:
            device = "auto" if self.address else self.device  # external workers: their own
            fut = self.client.submit(run_comparison, job.runner, job.job, self.data_dir, device,
                                     self.limits.timeout_s, self.limits.memory_mb, pure=False,
                                     key=f"comparison-{cid}-{uuid.uuid4().hex[:8]}")
            self._futures[cid] = fut
            try:
                out = await fut
            except KilledWorker:
                out = {"status": "failed",
                       "error": WORKER_DIED.format(n=self.limits.retries + 1, id=job.run_id)}
            except Exception as exc:  # the job could not be sent, the scheduler went away
                if cid in self._cancelling:
                    return
                error = f"{type(exc).__name__}: {exc}"
                # A client that loses its scheduler cancels every future it holds.
                lost = isinstance(exc, concurrent.futures.CancelledError)
                out = {"status": "failed",
                       "error": LOST.format(error=error, id=job.run_id) if lost else error}
            if out.get("traceback"):
                log.warning("comparison %s (%s) failed:\n%s", cid, job.runner, out["traceback"])
            if cid not in self._cancelling:
                await self.ends.record(cid, out)
        except asyncio.CancelledError:
            if cid in self._cancelling:
                return
            raise
        except Exception:
            log.exception("comparison %s (%s): could not record its end", cid, job.runner)
        finally:
            self._inflight.pop(cid, None)
            self._futures.pop(cid, None)
            self._cancelling.discard(cid)
            self._wake.set()

CLIENT_HEADER = "x-playground-client"
CLIENT_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,64}\Z")


def client_of(request: Request) -> str:
    """Whose share of the queue a request's jobs take: the address, and the tab's id when the
    page sent one (anything else in the header is ignored: the address alone)."""
    host = request.client.host if request.client else "-"
    tab = request.headers.get(CLIENT_HEADER, "")
    return f"{host} tab {tab}" if CLIENT_ID_RE.match(tab) else host


# -- store transactions -----------------------------------------------------------------------

def _migrate(conn: sqlite3.Connection) -> None:
    """Columns added since the table was first made (stores from before the job limits)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(comparisons)")}
    for column, kind in (("client", "TEXT"), ("cost", "REAL")):
        if column not in have:
            conn.execute(f"ALTER TABLE comparisons ADD COLUMN {column} {kind}")


def _insert(rows):
    def fn(conn: sqlite3.Connection) -> None:
        now = _now()
        conn.executemany(
            "INSERT OR IGNORE INTO comparisons (run_id, runner, status, error, device, client, "
            "cost, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(*row, now) for row in rows])
        # A re-queue (POST): rows that exist and are neither queued nor running start over.
        for run_id, runner, status, error, device, client, cost in rows:
            conn.execute(
                "UPDATE comparisons SET status = ?, error = ?, device = ?, client = ?, cost = ?, "
                "result = NULL, created_at = ?, started_at = NULL, finished_at = NULL "
                "WHERE run_id = ? AND runner = ? AND status NOT IN ('queued', 'running')",
                (status, error, device, client, cost, now, run_id, runner))
    return fn


def _any_queued(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM comparisons WHERE status = 'queued' LIMIT 1").fetchone() \
        is not None


def _load(client: str):
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


def _cancel(run_id: str):
    def fn(conn: sqlite3.Connection) -> list[int]:
        running = [r[0] for r in conn.execute(
            "SELECT id FROM comparisons WHERE run_id = ? AND status = 'running'", (run_id,))]
        conn.execute("UPDATE comparisons SET status = 'failed', error = ?, finished_at = ? "
                     "WHERE run_id = ? AND status IN ('queued', 'running')",
                     (CANCELLED, _now(), run_id))
        return running
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


def _finish(comparison_id: int, out: dict, ended: str):
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
    found = kind_of(kind)  # its main timing (py_core/jobs/kinds.py)
    key = found.main_timing.key if found is not None and found.runners else None
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


def waiting(queue: Queue | None, row: sqlite3.Row, ahead: int) -> str | None:
    """Why a queued job has not started (or a running one's end is not in the store yet)."""
    if queue is None:
        return None
    if row["status"] == "running":
        return queue.ends.why(row["id"])
    if row["status"] != "queued":
        return None
    if queue.problem:
        return queue.problem
    if not queue.capacity():
        return f"the Dask cluster {queue.dask.where()} is starting"
    return (f"{ahead} job(s) ahead of it; {queue.capacity()} run at a time" if ahead
            else "next to run")


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
        ahead = {r["id"]: conn.execute("SELECT COUNT(*) FROM comparisons WHERE status = 'queued' "
                                       "AND id < ?", (r["id"],)).fetchone()[0]
                 for r in rows if r["status"] == "queued"}
        return run, rows, ahead

    run, rows, ahead = await request.app.state.store.read(fn)
    queue = getattr(request.app.state, "comparisons", None)
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
        "enabled": queue is not None, "browser": browser,
        "problem": queue.problem if queue is not None else None,
        "comparisons": [{**_present(run["kind"], browser, r),
                         "waiting": waiting(queue, r, ahead.get(r["id"], 0))} for r in rows]},
        status)


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
    body = await read_json(request, request.app.state.settings.max_json_bytes, empty={})
    runners = body.get("runners") if isinstance(body, dict) else None
    if runners is not None and (not isinstance(runners, list)
                                or not all(isinstance(r, str) and r in RUNNERS for r in runners)):
        raise ClientError(400, f"must be a list of runner names from {list(RUNNERS)}",
                          field="runners")
    row = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT body FROM runs WHERE id = ?", (run_id,)).fetchone())
    if row is None:
        raise ClientError(404, "no run with this id", field="id")
    run = json.loads(row["body"])
    admitted = await queue.admit(run)
    if isinstance(admitted, jobcost.Refused):  # the message its rows got at POST /api/runs
        raise ClientError(422, str(admitted), field=admitted.field)
    client = client_of(request)
    active = {r[0] for r in await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT runner FROM comparisons WHERE run_id = ? AND status IN ('queued', 'running')",
        (run_id,)).fetchall())}
    await queue.check_room(client, len([r for r in queue.queueable(run, runners)
                                        if r.name not in active]))
    await queue.enqueue(run, runners, client=client, admitted=admitted)
    return await _answer(request, run_id, 202)


async def delete_comparisons(request: Request) -> JSONResponse:
    run_id = _run_id(request)
    queue: Queue | None = getattr(request.app.state, "comparisons", None)
    exists = await request.app.state.store.read(lambda conn: conn.execute(
        "SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone())
    if exists is None:
        raise ClientError(404, "no run with this id", field="id")
    if queue is not None:
        await queue.cancel(run_id)
    return await _answer(request, run_id)


def limits_of(settings) -> Limits:
    d = Limits()

    def num(name, default):
        value = getattr(settings, name, None)
        if value is None:
            value = os.environ.get(f"PLAYGROUND_{name.upper()}", default)
        return float(value)

    return Limits(timeout_s=num("job_timeout_s", d.timeout_s),
                  memory_mb=num("job_memory_mb", d.memory_mb),
                  retries=int(num("job_retries", d.retries)),
                  client_queue=int(num("client_queue_limit", d.client_queue)),
                  queue=int(num("queue_limit", d.queue)),
                  caps={name: num(name, default) for name, default in d.caps.items()})


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
                  [n.strip() for n in names if n.strip()] or None,
                  cluster=getattr(settings, "cluster", None) or os.environ.get("PLAYGROUND_CLUSTER"),
                  limits=limits_of(settings))
    await queue.start()
    app.state.comparisons = queue
    hooks = getattr(app.state, "before_run_stored", None)
    if hooks is None:
        hooks = app.state.before_run_stored = []
    hooks.append(queue.before_run_stored)
    app.state.on_run_stored.append(queue.enqueue)
    try:
        yield
    finally:
        app.state.on_run_stored.remove(queue.enqueue)
        hooks.remove(queue.before_run_stored)
        app.state.comparisons = None
        await queue.stop()


routes = [
    Route("/api/runs/{id}/comparisons", get_comparisons, methods=["GET"]),
    Route("/api/runs/{id}/comparisons", post_comparisons, methods=["POST"]),
    Route("/api/runs/{id}/comparisons", delete_comparisons, methods=["DELETE"]),
]
